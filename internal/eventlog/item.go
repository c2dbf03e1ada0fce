package eventlog

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/ratelimit"
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
	// Author is who wrote an event of a space; absent in a user's stream.
	Author string `dynamodbav:"author,omitempty"`
	// Deleted marks a tombstone (its payload is then "{}").
	Deleted bool `dynamodbav:"deleted,omitempty"`
}

// eventAttributes are the attributes every event item has, all strings.
var eventAttributes = []string{"user_id", "event_id", "received_key", "type", "occurred_at", "received_at", "payload"}

func encodeEvent(ev syncevent.Event) map[string]types.AttributeValue {
	item, err := attributevalue.MarshalMap(eventItem{
		UserID: ev.UserID, ID: ev.ID, ReceivedKey: ev.Position.SortKey(), Type: ev.Type, OccurredAt: ev.OccurredAt,
		ReceivedAt: ev.ReceivedAt.UTC().Format(syncevent.TimestampLayout), Payload: string(ev.Payload), Author: ev.Author,
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
		UserID: it.UserID, ID: it.ID, Author: it.Author, Deleted: it.Deleted, Type: it.Type, OccurredAt: it.OccurredAt,
		ReceivedAt: received, Position: pos, Payload: []byte(it.Payload),
	}, nil
}

// head is a user's head item: the sequence number of their last
// committed event, and their rate limit's bucket as that commit left it.
// Both change only together, under the head's condition.
type head struct {
	seq    uint64
	bucket ratelimit.State
}

// The head item's attributes besides its keys and attrHeadSeq: the
// bucket's tokens, and when it was last taken from (Unix milliseconds).
const (
	attrHeadTokens   = "tokens"
	attrHeadRefilled = "refilled_ms"
)

// encodeHead is h as the head item of userID.
func encodeHead(userID string, h head) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{attrUserID: str(userID), attrEventID: str(headID), attrHeadSeq: num(h.seq)}
	if h.bucket.Stored {
		item[attrHeadTokens] = &types.AttributeValueMemberN{Value: strconv.FormatFloat(h.bucket.Tokens, 'f', -1, 64)}
		item[attrHeadRefilled] = &types.AttributeValueMemberN{Value: strconv.FormatInt(h.bucket.Refilled.UnixMilli(), 10)}
	}
	return item
}

// decodeHead reads a head item; no item is the head 0 with a full bucket,
// and so is a head written with no bucket.
func decodeHead(item map[string]types.AttributeValue) (head, error) {
	if len(item) == 0 {
		return head{}, nil
	}
	n, ok := item[attrHeadSeq].(*types.AttributeValueMemberN)
	if !ok {
		return head{}, fmt.Errorf("%w: the head has no number %s", errBadItem, attrHeadSeq)
	}
	seq, err := strconv.ParseUint(n.Value, 10, 64)
	if err != nil {
		return head{}, fmt.Errorf("%w: head %s: %w", errBadItem, attrHeadSeq, err)
	}
	h := head{seq: seq}
	tokens, tok := item[attrHeadTokens].(*types.AttributeValueMemberN)
	refilled, ref := item[attrHeadRefilled].(*types.AttributeValueMemberN)
	if tok && ref {
		t, err1 := strconv.ParseFloat(tokens.Value, 64)
		ms, err2 := strconv.ParseInt(refilled.Value, 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return head{}, fmt.Errorf("%w: head bucket: %w", errBadItem, err)
		}
		h.bucket = ratelimit.State{Stored: true, Tokens: t, Refilled: time.UnixMilli(ms)}
	}
	return h, nil
}

func str(s string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: s} }

func num(n uint64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
}
