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

// PutNew is the transactional write that stores ev, conditioned on its id
// being new for its user.
func (e *Events) PutNew(ev syncevent.Event) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(e.table),
		Item: map[string]types.AttributeValue{
			attrUserID:      str(ev.UserID),
			attrEventID:     str(ev.ID),
			attrReceivedKey: str(ev.Position().SortKey()),
			attrType:        str(ev.Type),
			attrOccurredAt:  str(ev.OccurredAt),
			attrReceivedAt:  str(ev.ReceivedAt.UTC().Format(syncevent.TimestampLayout)),
			attrPayload:     str(string(ev.Payload)),
		},
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": attrEventID},
	}}
}

// After yields userID's events in receive order, from just after the
// position after, and stops when the caller stops or the events run out.
// It reads them batch items per Query as the caller asks for more (a Query
// returns fewer when DynamoDB's 1 MB cap cuts it short, and the next one
// carries on from there), with strong consistency, so that an event a client
// was just answered 201 for is there.
func (e *Events) After(ctx context.Context, userID string, after syncevent.Position, batch int) iter.Seq2[syncevent.Event, error] {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(e.table),
		IndexName:                 aws.String(ByReceivedIndex),
		KeyConditionExpression:    aws.String("#u = :u"),
		ExpressionAttributeNames:  map[string]string{"#u": attrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": str(userID)},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(batch)),
	}
	if !after.IsStart() {
		// The user id comes from the caller, never the cursor: a cursor can
		// only move within the caller's own events.
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			attrUserID: str(userID), attrEventID: str(after.ID), attrReceivedKey: str(after.SortKey()),
		}
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
	var received, payload string
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{attrUserID, &ev.UserID}, {attrEventID, &ev.ID}, {attrType, &ev.Type},
		{attrOccurredAt, &ev.OccurredAt}, {attrReceivedAt, &received}, {attrPayload, &payload},
	} {
		if err := readAttr(item, f.name, f.dst); err != nil {
			return syncevent.Event{}, fmt.Errorf("event item: %w", err)
		}
	}
	t, err := time.Parse(syncevent.TimestampLayout, received)
	if err != nil {
		return syncevent.Event{}, fmt.Errorf("event item: %s: %w", attrReceivedAt, err)
	}
	ev.ReceivedAt, ev.Payload = t, []byte(payload)
	return ev, nil
}
