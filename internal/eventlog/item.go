package eventlog

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/syncevent"
)

// eventItem is an event as the events table holds it.
type eventItem struct {
	UserID      string `dynamodbav:"user_id"`
	ID          string `dynamodbav:"event_id"`
	ReceivedKey string `dynamodbav:"received_key"`
	Type        string `dynamodbav:"type"`
	OccurredAt  string `dynamodbav:"occurred_at"`
	ReceivedAt  string `dynamodbav:"received_at"`
	Payload     string `dynamodbav:"payload"`
}

// eventAttributes are the attributes every event item has, all strings.
var eventAttributes = []string{"user_id", "event_id", "received_key", "type", "occurred_at", "received_at", "payload"}

func encodeEvent(ev syncevent.Event) map[string]types.AttributeValue {
	item, err := attributevalue.MarshalMap(eventItem{
		UserID: ev.UserID, ID: ev.ID, ReceivedKey: ev.Position.SortKey(), Type: ev.Type, OccurredAt: ev.OccurredAt,
		ReceivedAt: ev.ReceivedAt.UTC().Format(syncevent.TimestampLayout), Payload: string(ev.Payload),
	})
	if err != nil {
		panic(err) // strings always marshal
	}
	return item
}

// errBadItem reports an item of the events table this package did not write.
var errBadItem = errors.New("malformed item in the events table")

// decodeEvent reads an event item, refusing one that lacks an attribute
// or holds one of another type.
func decodeEvent(item map[string]types.AttributeValue) (syncevent.Event, error) {
	for _, name := range eventAttributes {
		if _, ok := item[name].(*types.AttributeValueMemberS); !ok {
			return syncevent.Event{}, fmt.Errorf("%w: %s is missing or not a string", errBadItem, name)
		}
	}
	var it eventItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return syncevent.Event{}, fmt.Errorf("%w: %w", errBadItem, err)
	}
	received, err := time.Parse(syncevent.TimestampLayout, it.ReceivedAt)
	if err != nil {
		return syncevent.Event{}, fmt.Errorf("%w: received_at: %w", errBadItem, err)
	}
	pos, err := syncevent.ParseSortKey(it.ReceivedKey)
	if err != nil {
		return syncevent.Event{}, fmt.Errorf("%w: received_key: %w", errBadItem, err)
	}
	return syncevent.Event{
		UserID: it.UserID, ID: it.ID, Type: it.Type, OccurredAt: it.OccurredAt,
		ReceivedAt: received, Position: pos, Payload: []byte(it.Payload),
	}, nil
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
	n, ok := item[attrHeadSeq].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("%w: the head has no number %s", errBadItem, attrHeadSeq)
	}
	seq, err := strconv.ParseUint(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: head %s: %w", errBadItem, attrHeadSeq, err)
	}
	return seq, nil
}

func str(s string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: s} }

func num(n uint64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
}
