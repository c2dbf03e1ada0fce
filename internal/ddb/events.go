package ddb

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/syncevent"
)

// Events reads and writes the events table.
type Events struct {
	client *dynamodb.Client
	table  string
}

// NewEvents returns Events for the table named table.
func NewEvents(client *dynamodb.Client, table string) *Events {
	return &Events{client: client, table: table}
}

// headID is the event_id of each user's head item, which holds the
// sequence number of the user's last committed event. Event ids are UUIDs,
// so it is never one; it has no received_key, so the index never lists it.
const headID = "head"

// PutNew is the transactional write that stores ev at ev.Position,
// conditioned on its id being new for its user.
func (e *Events) PutNew(ev syncevent.Event) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(e.table),
		Item: map[string]types.AttributeValue{
			attrUserID:      str(ev.UserID),
			attrEventID:     str(ev.ID),
			attrReceivedKey: str(ev.Position.SortKey()),
			attrType:        str(ev.Type),
			attrOccurredAt:  str(ev.OccurredAt),
			attrReceivedAt:  str(ev.ReceivedAt.UTC().Format(syncevent.TimestampLayout)),
			attrPayload:     str(string(ev.Payload)),
		},
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": attrEventID},
	}}
}

// advanceHead is the transactional write that moves userID's head from
// sequence number from to to, conditioned on the head being at from (no
// head item at all for 0), and returning the head item if it is not, so
// that the caller learns the real head without another call.
func (e *Events) advanceHead(userID string, from, to uint64) types.TransactWriteItem {
	put := &types.Put{
		TableName:                           aws.String(e.table),
		Item:                                map[string]types.AttributeValue{attrUserID: str(userID), attrEventID: str(headID), attrHeadSeq: num(to)},
		ExpressionAttributeNames:            map[string]string{"#id": attrEventID},
		ConditionExpression:                 aws.String("attribute_not_exists(#id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if from > 0 {
		put.ExpressionAttributeNames = map[string]string{"#seq": attrHeadSeq}
		put.ConditionExpression = aws.String("#seq = :from")
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":from": num(from)}
	}
	return types.TransactWriteItem{Put: put}
}

// Head reads userID's head with strong consistency: the sequence number of
// the user's last committed event, 0 if none.
func (e *Events) Head(ctx context.Context, userID string) (uint64, error) {
	out, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.table),
		Key:            map[string]types.AttributeValue{attrUserID: str(userID), attrEventID: str(headID)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("read head: %w", err)
	}
	return decodeHead(out.Item)
}

// isHead reports a user's head item.
func isHead(item map[string]types.AttributeValue) bool {
	id, ok := item[attrEventID].(*types.AttributeValueMemberS)
	return ok && id.Value == headID
}

// decodeHead reads a head item; no item is the head 0.
func decodeHead(item map[string]types.AttributeValue) (uint64, error) {
	if len(item) == 0 {
		return 0, nil
	}
	var seq int64
	if err := readAttr(item, attrHeadSeq, &seq); err != nil || seq < 0 {
		return 0, fmt.Errorf("head item: %w", errBadRecord)
	}
	return uint64(seq), nil
}

// After yields userID's events in commit order, from just after the
// position after, and stops when the caller stops or the events run out.
// It reads them batch items per Query as the caller asks for more (a Query
// returns fewer when DynamoDB's 1 MB cap cuts it short, and the next one
// carries on from there), with strong consistency, so that an event a client
// was just answered 201 for is there.
func (e *Events) After(ctx context.Context, userID string, after syncevent.Position, batch int) iter.Seq2[syncevent.Event, error] {
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
		TableName:                 aws.String(e.table),
		IndexName:                 aws.String(ByReceivedIndex),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#u": attrUserID, "#rk": attrReceivedKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": str(userID), ":after": str(bound)},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(batch)),
	}
	return func(yield func(syncevent.Event, error) bool) {
		for {
			out, err := e.client.Query(ctx, in)
			if err != nil {
				yield(syncevent.Event{}, fmt.Errorf("query events: %w", err))
				return
			}
			for _, item := range out.Items {
				ev, err := decodeEvent(item)
				if !yield(ev, err) || err != nil {
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

func decodeEvent(item map[string]types.AttributeValue) (syncevent.Event, error) {
	var ev syncevent.Event
	var received, payload, position string
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{attrUserID, &ev.UserID}, {attrEventID, &ev.ID}, {attrType, &ev.Type},
		{attrOccurredAt, &ev.OccurredAt}, {attrReceivedAt, &received}, {attrPayload, &payload},
		{attrReceivedKey, &position},
	} {
		if err := readAttr(item, f.name, f.dst); err != nil {
			return syncevent.Event{}, fmt.Errorf("event item: %w", err)
		}
	}
	t, err := time.Parse(syncevent.TimestampLayout, received)
	if err != nil {
		return syncevent.Event{}, fmt.Errorf("event item: %s: %w", attrReceivedAt, err)
	}
	pos, err := syncevent.ParseSortKey(position)
	if err != nil {
		return syncevent.Event{}, fmt.Errorf("event item: %s: %w", attrReceivedKey, err)
	}
	ev.ReceivedAt, ev.Payload, ev.Position = t, []byte(payload), pos
	return ev, nil
}

// Stored returns those of ids that userID has stored, in the order given,
// reading with strong consistency: at most 100 ids, one BatchGetItem (and
// again for any keys it leaves unprocessed).
func (e *Events) Stored(ctx context.Context, userID string, ids []string) ([]string, error) {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = map[string]types.AttributeValue{attrUserID: str(userID), attrEventID: str(id)}
	}
	found := map[string]bool{}
	req := map[string]types.KeysAndAttributes{e.table: {Keys: keys, ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("#id"),
		ExpressionAttributeNames: map[string]string{"#id": attrEventID}}}
	for len(req) > 0 && len(req[e.table].Keys) > 0 {
		out, err := e.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, fmt.Errorf("read stored events: %w", err)
		}
		for _, item := range out.Responses[e.table] {
			if id, ok := item[attrEventID].(*types.AttributeValueMemberS); ok {
				found[id.Value] = true
			}
		}
		req = out.UnprocessedKeys
	}
	var stored []string
	for _, id := range ids {
		if found[id] {
			stored = append(stored, id)
		}
	}
	return stored, nil
}
