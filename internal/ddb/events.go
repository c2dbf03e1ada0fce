package ddb

import (
	"context"
	"fmt"
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
			attrReceivedKey: str(ev.SortKey()),
			attrType:        str(ev.Type),
			attrOccurredAt:  str(ev.OccurredAt),
			attrReceivedAt:  str(ev.ReceivedAt.UTC().Format(syncevent.ReceivedAtLayout)),
			attrPayload:     str(string(ev.Payload)),
		},
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": attrEventID},
	}}
}

// List returns up to limit of userID's events in receive order, starting
// after the position after ("" for the first page), and the position to
// continue from, "" when there is nothing more. It reads limit+1 items so that
// the last page is known to be last (one Query, more only when DynamoDB's
// 1 MB cap cuts one short), and reads with strong consistency so that an
// event a client was just answered 201 for is on the page.
func (e *Events) List(ctx context.Context, userID string, limit int, after string) ([]syncevent.Event, string, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(e.table),
		IndexName:                 aws.String(ByReceivedIndex),
		KeyConditionExpression:    aws.String("#u = :u"),
		ExpressionAttributeNames:  map[string]string{"#u": attrUserID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": str(userID)},
		ConsistentRead:            aws.Bool(true),
	}
	if after != "" {
		id, err := syncevent.ParseSortKey(after)
		if err != nil {
			return nil, "", err
		}
		// The user id comes from the caller, never the cursor: a cursor can
		// only move within the caller's own events.
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			attrUserID: str(userID), attrEventID: str(id), attrReceivedKey: str(after),
		}
	}
	items, err := e.query(ctx, in, limit+1)
	if err != nil {
		return nil, "", err
	}
	events := make([]syncevent.Event, 0, min(len(items), limit))
	for _, item := range items[:min(len(items), limit)] {
		ev, err := decodeEvent(item)
		if err != nil {
			return nil, "", err
		}
		events = append(events, ev)
	}
	next := ""
	if len(items) > limit {
		next = events[len(events)-1].SortKey()
	}
	return events, next, nil
}

// query reads up to want items. One Query does it, unless DynamoDB stops
// at 1 MB of items first: then the rest is read from where it stopped.
func (e *Events) query(ctx context.Context, in *dynamodb.QueryInput, want int) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	for {
		in.Limit = aws.Int32(int32(want - len(items)))
		out, err := e.client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("query events: %w", err)
		}
		items = append(items, out.Items...)
		if len(items) >= want || len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
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
	t, err := time.Parse(syncevent.ReceivedAtLayout, received)
	if err != nil {
		return syncevent.Event{}, fmt.Errorf("event item: %s: %w", attrReceivedAt, err)
	}
	ev.ReceivedAt, ev.Payload = t, []byte(payload)
	return ev, nil
}
