package eventstore

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// eventItem is an event as the events table holds it (the tags are the
// Attr constants).
type eventItem struct {
	Stream      string `dynamodbav:"user_id"`
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
var eventAttributes = []string{attrStream, attrID, attrPosition, attrType, attrOccurredAt, attrReceivedAt, attrPayload}

// encodeEvent is ev as an event item.
func encodeEvent(ev syncevent.Event) map[string]types.AttributeValue {
	item, err := attributevalue.MarshalMap(eventItem{
		Stream: ev.Stream, ID: ev.ID, ReceivedKey: ev.Position.SortKey(), Type: ev.Type, OccurredAt: ev.OccurredAt,
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
		Stream: it.Stream, ID: it.ID, Author: it.Author, Deleted: it.Deleted, Type: it.Type, OccurredAt: it.OccurredAt,
		ReceivedAt: received, Position: pos, Payload: []byte(it.Payload),
	}, nil
}

// Head is a stream's head item: the sequence number of its last
// committed event, and the rate limit's bucket as that commit left it.
// Both change only together, under the head's condition.
type Head struct {
	Seq    uint64
	Bucket ratelimit.State
	// YieldUntil, set by the sequencer (sequence.go) as it places a
	// busy space's accepted events, is until when writes that may be
	// accepted instead fail at the head (MoveHead): so that they are
	// accepted, and the sequencer's passes are not starved of the head by
	// them.
	YieldUntil time.Time
}

// The head item's attributes besides its keys and attrSeq: the
// bucket's tokens, and when it was last taken from (Unix milliseconds).
const (
	attrHeadTokens   = "tokens"
	attrHeadRefilled = "refilled_ms"
)

// AttrHeadYield is the head's YieldUntil (Unix milliseconds).
const AttrHeadYield = "yield_until_ms"

// encodeHead is h as the head item of stream.
func encodeHead(stream string, h Head) map[string]types.AttributeValue {
	item := Key(stream, HeadID)
	item[attrSeq] = N(h.Seq)
	if h.Bucket.Stored {
		item[attrHeadTokens] = &types.AttributeValueMemberN{Value: strconv.FormatFloat(h.Bucket.Tokens, 'f', -1, 64)}
		item[attrHeadRefilled] = &types.AttributeValueMemberN{Value: strconv.FormatInt(h.Bucket.Refilled.UnixMilli(), 10)}
	}
	if !h.YieldUntil.IsZero() {
		item[AttrHeadYield] = Millis(h.YieldUntil)
	}
	return item
}

// decodeHead reads a head item; no item is the head 0 with a full bucket,
// and so is a head written with no bucket.
func decodeHead(item map[string]types.AttributeValue) (Head, error) {
	if len(item) == 0 {
		return Head{}, nil
	}
	n, ok := item[attrSeq].(*types.AttributeValueMemberN)
	if !ok {
		return Head{}, fmt.Errorf("%w: the head has no number %s", errBadItem, attrSeq)
	}
	seq, err := strconv.ParseUint(n.Value, 10, 64)
	if err != nil {
		return Head{}, fmt.Errorf("%w: head %s: %w", errBadItem, attrSeq, err)
	}
	h := Head{Seq: seq}
	tokens, tok := item[attrHeadTokens].(*types.AttributeValueMemberN)
	refilled, ref := item[attrHeadRefilled].(*types.AttributeValueMemberN)
	if tok && ref {
		t, err1 := strconv.ParseFloat(tokens.Value, 64)
		ms, err2 := strconv.ParseInt(refilled.Value, 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return Head{}, fmt.Errorf("%w: head bucket: %w", errBadItem, err)
		}
		h.Bucket = ratelimit.State{Stored: true, Tokens: t, Refilled: time.UnixMilli(ms)}
	}
	if y, ok := item[AttrHeadYield].(*types.AttributeValueMemberN); ok {
		ms, err := strconv.ParseInt(y.Value, 10, 64)
		if err != nil {
			return Head{}, fmt.Errorf("%w: head %s: %w", errBadItem, AttrHeadYield, err)
		}
		h.YieldUntil = time.UnixMilli(ms)
	}
	return h, nil
}

// floorItem is a stream's floor item (trim.go has its rules):
// every event at or below Seq may be gone, every one at or below Trimmed
// is.
type floorItem struct{ Seq, Trimmed uint64 }

// attrTrimmed is the floor item's Trimmed; its Seq is attrSeq.
const attrTrimmed = "trimmed"

// decodeFloor reads a floor item; no item is the floor 0.
func decodeFloor(item map[string]types.AttributeValue) (floorItem, error) {
	var f floorItem
	for name, into := range map[string]*uint64{attrSeq: &f.Seq, attrTrimmed: &f.Trimmed} {
		if v, ok := item[name].(*types.AttributeValueMemberN); ok {
			var err error
			if *into, err = strconv.ParseUint(v.Value, 10, 64); err != nil {
				return floorItem{}, fmt.Errorf("%w: floor %s: %w", errBadItem, name, err)
			}
		}
	}
	return f, nil
}

// Key is the key of stream's item id.
func Key(stream, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrStream: S(stream), attrID: S(id)}
}

// S is a string attribute.
func S(s string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: s} }

// Millis is t as a number attribute of Unix milliseconds.
func Millis(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// N is a number attribute.
func N(n uint64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
}

// PendingPrefix begins the position of an event accepted and not yet
// sequenced (sequence.go): below "0", where every read of a stream
// starts, and below every legacy and sequence key, so no read lists it,
// no cursor points at it and no trim reaches it.
const PendingPrefix = "-"

// PendingKey is the pending position of the event at index of a request
// accepted at: the accept time, then the request (its first event's id,
// unique in its stream), then the index, so that one request's events
// are adjacent and in order, and a pass can take a request whole.
func PendingKey(at time.Time, request string, index int) string {
	return fmt.Sprintf("%s%013d#%s#%03d", PendingPrefix, at.UnixMilli(), request, index)
}

// pendingBefore is the least pending key of an event accepted at t or
// later: every key below it was accepted earlier.
func pendingBefore(t time.Time) string {
	return fmt.Sprintf("%s%013d", PendingPrefix, t.UnixMilli())
}

// pendingRequest is the part of a pending key that names its request
// (everything before the index), and false for a key that is not pending.
func pendingRequest(key string) (string, bool) {
	i := strings.LastIndexByte(key, '#')
	if !strings.HasPrefix(key, PendingPrefix) || i < 0 {
		return "", false
	}
	return key[:i], true
}

// pendingSince is when the event of a pending key was accepted.
func pendingSince(key string) (time.Time, bool) {
	ms, _, ok := strings.Cut(strings.TrimPrefix(key, PendingPrefix), "#")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || !strings.HasPrefix(key, PendingPrefix) {
		return time.Time{}, false
	}
	return time.UnixMilli(n), true
}

// isPending reports whether item is an event accepted and not yet
// sequenced.
func isPending(item map[string]types.AttributeValue) bool {
	rk, ok := item[attrPosition].(*types.AttributeValueMemberS)
	return ok && strings.HasPrefix(rk.Value, PendingPrefix)
}

// encodePending is ev as an accepted event's item: at the pending
// position key, ev.Position unused, and in the index of pending events
// (PendingIndex) until placed.
func encodePending(ev syncevent.Event, key string) map[string]types.AttributeValue {
	item := encodeEvent(ev)
	item[attrPosition] = S(key)
	item[attrPendingShard] = S(PendingShard(ev.Stream))
	return item
}

// pendingShards is how many partitions the index of pending events
// spreads them over: an index key takes about 1,000 writes a second, and
// every accept of the table writes it (and every placement removes it).
const pendingShards = 16

// PendingShard is stream's partition of the index of pending events: all
// of one stream's in one, so that a sweep finds each stream once a shard.
func PendingShard(stream string) string {
	h := fnv.New32a()
	h.Write([]byte(stream))
	return strconv.Itoa(int(h.Sum32() % pendingShards))
}
