package eventstore

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Read yields userID's events in commit order from just after the
// position after, and stops when the caller stops, the events run out,
// or the next event does not follow the last one with no gap.
//
// The gap stop is what makes a pull safe: a Query is not a snapshot, and
// DynamoDB documents that a transaction committing while one runs shows
// in the part not read yet, so one Query can see position p+1 and not p
// when p committed just before p+1 in a part already read. p is committed
// by then (the head orders them), so a reader that stops before p+1 reads
// both next time. Events from before sequence numbers (legacy positions)
// have no such order and are read as they sort.
//
// Retention (Trim) removes a stream's oldest events below a floor: read
// from the start, the stream begins just above it (one GetItem more); read
// from a cursor, a gap at the first position is looked up, and when the
// missing event is at or below the floor Read yields ErrCursorExpired.
//
// It reads batch items per Query as the caller asks for more (a Query
// returns fewer when DynamoDB's 1 MB cap cuts it short, and the next one
// carries on from there), with strong consistency, so that an event a
// client was just answered 201 for is there.
func (l *Store) Read(ctx context.Context, userID string, after syncevent.Position, batch int) iter.Seq2[syncevent.Event, error] {
	// The user id comes from the caller, never the cursor: a cursor can
	// only move within the caller's own events. Sort keys are unique per
	// user, so "greater than" starts just after the position; from the
	// start, every sort key is at least "0" (a legacy key starts with a
	// year, a sequence key with "p"). A range on the sort key also keeps
	// out the head, which has none, on a backend whose index is not sparse.
	cond, bound := "#u = :u AND #rk > :after", after.SortKey()
	if after.IsStart() {
		cond, bound = "#u = :u AND #rk >= :after", "0"
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(l.t.Name),
		IndexName:                 aws.String(ByReceivedIndex),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#u": attrStream, "#rk": attrPosition},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": S(userID), ":after": S(bound)},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(batch)),
	}
	return func(yield func(syncevent.Event, error) bool) {
		// next follows prev: the position the next event must have.
		prev := uint64(0)
		if !after.IsLegacy() {
			prev = after.Seq
		}
		// From the start, the stream begins above its floor: what is at or
		// below it is trimmed, or about to be (a trim raises the floor
		// before it deletes).
		floorRead := after.IsStart()
		if floorRead {
			f, err := l.t.readFloor(ctx, userID)
			if err != nil {
				yield(syncevent.Event{}, err)
				return
			}
			prev = f.Seq
		}
		first := true
		for {
			out, err := l.t.Client.Query(ctx, in)
			if err != nil {
				yield(syncevent.Event{}, dynamodbstore.Classify(fmt.Errorf("query events: %w", err)))
				return
			}
			for _, item := range out.Items {
				ev, err := decodeEvent(item)
				if err != nil {
					yield(syncevent.Event{}, err)
					return
				}
				if !ev.Position.IsLegacy() {
					if ev.Position.Seq <= prev {
						continue // below the floor, its delete not done yet
					}
					if ev.Position.Seq != prev+1 {
						// A gap: the missing event is not visible yet, or, at
						// the read's first position, it may have been trimmed.
						if first && !floorRead {
							if err := l.belowFloor(ctx, userID, prev+1); err != nil {
								yield(syncevent.Event{}, err)
							}
						}
						return
					}
					prev, first = ev.Position.Seq, false
				}
				if !yield(ev, nil) {
					return
				}
			}
			if len(out.LastEvaluatedKey) == 0 {
				return
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
}

// Stored returns those of ids that userID has stored, in the order given,
// reading with strong consistency: at most 100 ids, one BatchGetItem, and
// again, after a jittered backoff, for any keys it leaves unprocessed
// (DynamoDB does under load, and asks for a backoff).
func (l *Store) Stored(ctx context.Context, userID string, ids []string) ([]string, error) {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = map[string]types.AttributeValue{attrStream: S(userID), attrID: S(id)}
	}
	found := map[string]bool{}
	req := map[string]types.KeysAndAttributes{l.t.Name: {Keys: keys, ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("#id"),
		ExpressionAttributeNames: map[string]string{"#id": attrID}}}
	err := untilProcessed(ctx, "read stored events", len(keys) > 0, func() (bool, error) {
		out, err := l.t.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return false, err
		}
		for _, item := range out.Responses[l.t.Name] {
			if id, ok := item[attrID].(*types.AttributeValueMemberS); ok {
				found[id.Value] = true
			}
		}
		req = out.UnprocessedKeys
		return len(req[l.t.Name].Keys) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !found[id] }), nil
}

// All reads every sequenced event of every user, as stored, with strong
// consistency: for tests and operators, never a request's path. Items
// that are not events are passed over.
func (l *Store) All(ctx context.Context) ([]syncevent.Event, error) {
	var all []syncevent.Event
	in := &dynamodb.ScanInput{TableName: aws.String(l.t.Name), ConsistentRead: aws.Bool(true)}
	for {
		page, err := l.t.Client.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", l.t.Name, err)
		}
		for _, item := range page.Items {
			if _, ok := item[attrPosition]; !ok || isPending(item) {
				continue // a head, a floor, a space's meta or member item; an event not yet sequenced
			}
			ev, err := decodeEvent(item)
			if err != nil {
				return nil, fmt.Errorf("scan %s: %w", l.t.Name, err)
			}
			all = append(all, ev)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return all, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// ErrCursorExpired refuses a read from a position whose next events
// retention removed: the reader must start over from the stream's start
// (which now begins at the floor).
var ErrCursorExpired = errcode.New("CURSOR_EXPIRED",
	"Events after this cursor were removed by retention: drop what you hold of this stream and pull from the start")

// belowFloor is ErrCursorExpired when the event at position missing, not
// found where a read expected it, was trimmed (it is at or below stream's
// floor), and nil when it is only not visible yet.
func (l *Store) belowFloor(ctx context.Context, stream string, missing uint64) error {
	f, err := l.t.readFloor(ctx, stream)
	if err != nil {
		return err
	}
	if f.Seq >= missing {
		return ErrCursorExpired
	}
	return nil
}

// Role is user's role in the space of stream, read with strong
// consistency; found is false when they are not a member.
func (l *Store) Role(ctx context.Context, stream, user string) (role string, found bool, _ error) {
	return l.t.Role(ctx, stream, user)
}

// Spaces lists user's spaces, by id, with their role, with strong
// consistency.
func (l *Store) Spaces(ctx context.Context, user string) ([]SpaceListing, error) {
	return l.t.Spaces(ctx, user)
}
