package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Trimming: a stream's oldest events may be removed, from the oldest on,
// below a floor. Each stream that was ever trimmed has a floor item
// (event_id "floor"): seq, the floor (every event at or below it may be
// gone), and trimmed (every event at or below it is gone). Trim raises seq
// before it deletes and trimmed after, so an event missing at or below
// the floor was trimmed, and a trim cut off midway is finished by the
// next. A stream's newest event always stays, so a stream that had events
// never reads as empty, and a read that finds its next position missing
// finds a later one (Read).

// raiseFloor sets the floor item's attribute name to n unless it is at n
// or above already (another trim got there first), and only while the
// stream's head is above n: the floor stays below the newest event, and a
// trim that read a stream since erased and begun again (its head back
// near 0) leaves no floor over the new events. ok is false when the head
// refused: nothing may be deleted then.
func (t Table) raiseFloor(ctx context.Context, stream, name string, n uint64) (ok bool, _ error) {
	_, err := t.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName:                 aws.String(t.Name),
			Key:                       Key(stream, HeadID),
			ConditionExpression:       aws.String("attribute_exists(#s) AND #s > :n"),
			ExpressionAttributeNames:  map[string]string{"#s": attrSeq},
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": N(n)},
		}},
		{Update: &types.Update{
			TableName:                 aws.String(t.Name),
			Key:                       Key(stream, floorID),
			UpdateExpression:          aws.String("SET #n = :n"),
			ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :n"),
			ExpressionAttributeNames:  map[string]string{"#n": name},
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": N(n)},
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
func (t Table) Trim(ctx context.Context, stream string, cutoff time.Time, limit int) (TrimResult, error) {
	f, err := t.readFloor(ctx, stream)
	if err != nil {
		return TrimResult{}, err
	}
	doomed, to, gone, err := t.trimmable(ctx, stream, f, cutoff, limit)
	if err != nil {
		return TrimResult{}, err
	}
	if to > f.Seq {
		ok, err := t.raiseFloor(ctx, stream, attrSeq, to)
		if err != nil || !ok {
			return TrimResult{Floor: f.Seq}, err // the stream was erased meanwhile
		}
	}
	if err := t.deleteEvents(ctx, stream, doomed); err != nil {
		return TrimResult{}, err
	}
	if gone > f.Trimmed {
		if _, err := t.raiseFloor(ctx, stream, attrTrimmed, gone); err != nil {
			return TrimResult{}, err
		}
	}
	return TrimResult{Floor: to, Removed: len(doomed)}, nil
}

// trimmable reads stream's events after f.Trimmed in position order and
// returns the ids of those to go: every event at or below f.Seq still
// there (a trim cut off before), then each next one received before cutoff
// that has a successor, up to limit in all. to is the floor after them;
// gone is how far every event will be gone once they are deleted: to,
// unless the limit stopped it among the leftovers below f.Seq.
func (t Table) trimmable(ctx context.Context, stream string, f floorItem, cutoff time.Time, limit int) (ids []string, to, gone uint64, _ error) {
	to, gone = f.Seq, f.Trimmed
	if limit <= 0 {
		return nil, to, gone, nil
	}
	in := &dynamodb.QueryInput{
		TableName:                aws.String(t.Name),
		IndexName:                aws.String(ByReceivedIndex),
		KeyConditionExpression:   aws.String("#u = :u AND #rk BETWEEN :after AND :last"),
		ExpressionAttributeNames: map[string]string{"#u": attrStream, "#rk": attrPosition, "#id": attrID},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": S(stream), ":after": S(syncevent.At(f.Trimmed + 1).SortKey()), ":last": S(syncevent.At(1<<63 - 1).SortKey()),
		},
		ProjectionExpression: aws.String("#id, #rk, received_at"),
		ConsistentRead:       aws.Bool(true),
		// Two first: the common case is that the oldest event may not go
		// yet, which one item shows (and a second that it is not the newest).
		Limit: aws.Int32(2),
	}
	// done reports the result once the events collected end at last.
	done := func(last uint64) ([]string, uint64, uint64, error) {
		if last <= f.Seq && len(ids) == limit {
			return ids, to, max(gone, last), nil // leftovers may remain above last
		}
		return ids, to, max(gone, to), nil
	}
	var prev *trimCandidate
	var last uint64
	for {
		out, err := t.Client.Query(ctx, in)
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
	id, ok1 := item[attrID].(*types.AttributeValueMemberS)
	rk, ok2 := item[attrPosition].(*types.AttributeValueMemberS)
	at, ok3 := item[attrReceivedAt].(*types.AttributeValueMemberS)
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
func (t Table) deleteEvents(ctx context.Context, stream string, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), 25)
		reqs := make([]types.WriteRequest, n)
		for i, id := range ids[:n] {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{
				Key: Key(stream, id),
			}}
		}
		ids = ids[n:]
		req := map[string][]types.WriteRequest{t.Name: reqs}
		err := untilProcessed(ctx, "delete trimmed events", true, func() (bool, error) {
			out, err := t.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
			if err != nil {
				return false, err
			}
			req = out.UnprocessedItems
			return len(req[t.Name]) > 0, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
