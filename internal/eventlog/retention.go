package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Retention: a stream's oldest events may be removed, from the oldest on,
// below a floor. Each stream that was ever trimmed has a floor item
// (event_id "floor"): seq, the floor (every event at or below it may be
// gone), and trimmed (every event at or below it is gone). Trim raises seq
// before it deletes and trimmed after, so an event missing at or below
// the floor was trimmed, and a trim cut off midway is finished by the
// next. A stream's newest event always stays, so a stream that had events
// never reads as empty, and a read that finds its next position missing
// finds a later one (Read).

// floorID is the event_id of a stream's floor item; it has no
// received_key, so the index never lists it.
const floorID = "floor"

// attrTrimmed is the floor item's "every event at or below is gone".
const attrTrimmed = "trimmed"

// ErrCursorExpired refuses a read from a position whose next events
// retention removed: the reader must start over from the stream's start
// (which now begins at the floor).
var ErrCursorExpired = errcode.New("CURSOR_EXPIRED",
	"Events after this cursor were removed by retention: drop what you hold of this stream and pull from the start")

// floor is a stream's floor item.
type floor struct{ seq, trimmed uint64 }

func (l *Log) readFloor(ctx context.Context, stream string) (floor, error) {
	item, err := l.getItem(ctx, stream, floorID, "the floor")
	if err != nil {
		return floor{}, err
	}
	var f floor
	for name, into := range map[string]*uint64{attrHeadSeq: &f.seq, attrTrimmed: &f.trimmed} {
		if v, ok := item[name].(*types.AttributeValueMemberN); ok {
			if *into, err = strconv.ParseUint(v.Value, 10, 64); err != nil {
				return floor{}, fmt.Errorf("%w: floor %s: %w", errBadItem, name, err)
			}
		}
	}
	return f, nil
}

// raiseFloor sets the floor item's attribute name to n unless it is at n
// or above already (another trim got there first), and only while the
// stream's head is above n: the floor stays below the newest event, and a
// trim that read a stream since erased and begun again (its head back
// near 0) leaves no floor over the new events. ok is false when the head
// refused: nothing may be deleted then.
func (l *Log) raiseFloor(ctx context.Context, stream, name string, n uint64) (ok bool, _ error) {
	_, err := l.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName:                 aws.String(l.table),
			Key:                       key(stream, headID),
			ConditionExpression:       aws.String("attribute_exists(#s) AND #s > :n"),
			ExpressionAttributeNames:  map[string]string{"#s": attrHeadSeq},
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(n)},
		}},
		{Update: &types.Update{
			TableName:                 aws.String(l.table),
			Key:                       key(stream, floorID),
			UpdateExpression:          aws.String("SET #n = :n"),
			ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :n"),
			ExpressionAttributeNames:  map[string]string{"#n": name},
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(n)},
		}},
	}})
	if err == nil {
		return true, nil
	}
	var canceled *types.TransactionCanceledException
	if errors.As(err, &canceled) && len(canceled.CancellationReasons) == 2 {
		head, floor := aws.ToString(canceled.CancellationReasons[0].Code), aws.ToString(canceled.CancellationReasons[1].Code)
		switch {
		case head == "ConditionalCheckFailed" && (floor == "" || floor == "None" || floor == "ConditionalCheckFailed"):
			return false, nil
		case (head == "" || head == "None") && floor == "ConditionalCheckFailed":
			return true, nil // at n or above already
		}
	}
	return false, dynamodbstore.Classify(fmt.Errorf("raise the floor's %s: %w", name, err))
}

// TrimResult is what one Trim did.
type TrimResult struct {
	// Floor is the stream's floor after it: events at or below it are gone.
	Floor uint64
	// Removed counts the events it deleted.
	Removed int
}

// Trim removes stream's events received before cutoff, from the oldest
// on, at most limit of them, and never the stream's newest event: it
// raises the floor to the last event to go, deletes every event at or
// below it, then records them gone. It stops at the first event received
// at or after cutoff, and at a position not visible yet. Events from
// before sequence numbers are not its to remove.
//
// It is safe to run at any time and again, from several places: the floor
// only rises, and a deleted event is deleted once. Reads and writes go on
// meanwhile (a read from below the new floor is refused with
// ErrCursorExpired once its next event is gone). A trimmed event's id is
// free again in its stream.
func (l *Log) Trim(ctx context.Context, stream string, cutoff time.Time, limit int) (TrimResult, error) {
	f, err := l.readFloor(ctx, stream)
	if err != nil {
		return TrimResult{}, err
	}
	doomed, to, gone, err := l.trimmable(ctx, stream, f, cutoff, limit)
	if err != nil {
		return TrimResult{}, err
	}
	if to > f.seq {
		ok, err := l.raiseFloor(ctx, stream, attrHeadSeq, to)
		if err != nil || !ok {
			return TrimResult{Floor: f.seq}, err // the stream was erased meanwhile
		}
	}
	if err := l.deleteEvents(ctx, stream, doomed); err != nil {
		return TrimResult{}, err
	}
	if gone > f.trimmed {
		if _, err := l.raiseFloor(ctx, stream, attrTrimmed, gone); err != nil {
			return TrimResult{}, err
		}
	}
	return TrimResult{Floor: to, Removed: len(doomed)}, nil
}

// trimmable reads stream's events after f.trimmed in position order and
// returns the ids of those to go: every event at or below f.seq still
// there (a trim cut off before), then each next one received before cutoff
// that has a successor, up to limit in all. to is the floor after them;
// gone is how far every event will be gone once they are deleted: to,
// unless the limit stopped it among the leftovers below f.seq.
func (l *Log) trimmable(ctx context.Context, stream string, f floor, cutoff time.Time, limit int) (ids []string, to, gone uint64, _ error) {
	to, gone = f.seq, f.trimmed
	if limit <= 0 {
		return nil, to, gone, nil
	}
	in := &dynamodb.QueryInput{
		TableName:                aws.String(l.table),
		IndexName:                aws.String(ByReceivedIndex),
		KeyConditionExpression:   aws.String("#u = :u AND #rk BETWEEN :after AND :last"),
		ExpressionAttributeNames: map[string]string{"#u": attrUserID, "#rk": attrReceivedKey, "#id": attrEventID},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": str(stream), ":after": str(syncevent.At(f.trimmed + 1).SortKey()), ":last": str(syncevent.At(1<<63 - 1).SortKey()),
		},
		ProjectionExpression: aws.String("#id, #rk, received_at"),
		ConsistentRead:       aws.Bool(true),
		// Two first: the common case is that the oldest event may not go
		// yet, which one item shows (and a second that it is not the newest).
		Limit: aws.Int32(2),
	}
	// done reports the result once the events collected end at last.
	done := func(last uint64) ([]string, uint64, uint64, error) {
		if last <= f.seq && len(ids) == limit {
			return ids, to, max(gone, last), nil // leftovers may remain above last
		}
		return ids, to, max(gone, to), nil
	}
	var prev *trimCandidate
	var last uint64
	for {
		out, err := l.client.Query(ctx, in)
		if err != nil {
			return nil, 0, 0, dynamodbstore.Classify(fmt.Errorf("query events to trim: %w", err))
		}
		for _, item := range out.Items {
			c, err := decodeCandidate(item)
			if err != nil {
				return nil, 0, 0, err
			}
			// prev has a successor, c: it goes if it is at or below the
			// floor already, or the next position, received before cutoff.
			if prev != nil {
				if prev.seq > to && (prev.seq != to+1 || !prev.received.Before(cutoff)) {
					return done(last)
				}
				ids, to, last = append(ids, prev.id), max(to, prev.seq), prev.seq
				if len(ids) == limit {
					return done(last)
				}
			}
			prev = &c
		}
		if len(out.LastEvaluatedKey) == 0 {
			return done(last)
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		in.Limit = aws.Int32(int32(min(limit-len(ids)+1, 1000)))
	}
}

type trimCandidate struct {
	id       string
	seq      uint64
	received time.Time
}

func decodeCandidate(item map[string]types.AttributeValue) (trimCandidate, error) {
	var c trimCandidate
	id, ok1 := item[attrEventID].(*types.AttributeValueMemberS)
	rk, ok2 := item[attrReceivedKey].(*types.AttributeValueMemberS)
	at, ok3 := item["received_at"].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 || !ok3 {
		return c, fmt.Errorf("%w: an event to trim lacks its id, position or receive time", errBadItem)
	}
	pos, err := syncevent.ParseSortKey(rk.Value)
	if err != nil {
		return c, fmt.Errorf("%w: received_key: %w", errBadItem, err)
	}
	received, err := time.Parse(syncevent.TimestampLayout, at.Value)
	if err != nil {
		return c, fmt.Errorf("%w: received_at: %w", errBadItem, err)
	}
	return trimCandidate{id: id.Value, seq: pos.Seq, received: received}, nil
}

// deleteEvents deletes stream's events ids, 25 to a BatchWriteItem, again
// after a backoff for any DynamoDB leaves unprocessed.
func (l *Log) deleteEvents(ctx context.Context, stream string, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), 25)
		reqs := make([]types.WriteRequest, n)
		for i, id := range ids[:n] {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{
				Key: key(stream, id),
			}}
		}
		ids = ids[n:]
		req := map[string][]types.WriteRequest{l.table: reqs}
		err := untilProcessed(ctx, "delete trimmed events", true, func() (bool, error) {
			out, err := l.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
			if err != nil {
				return false, err
			}
			req = out.UnprocessedItems
			return len(req[l.table]) > 0, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// belowFloor is ErrCursorExpired when the event at position missing, not
// found where a read expected it, was trimmed (it is at or below stream's
// floor), and nil when it is only not visible yet.
func (l *Log) belowFloor(ctx context.Context, stream string, missing uint64) error {
	f, err := l.readFloor(ctx, stream)
	if err != nil {
		return err
	}
	if f.seq >= missing {
		return ErrCursorExpired
	}
	return nil
}
