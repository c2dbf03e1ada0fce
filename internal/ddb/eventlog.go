package ddb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/idempotency"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// EventLog stores new events together with their ledger record, in one
// transaction, at the next positions of their user's commit order: it
// implements idempotency.Store for events.
//
// Each user has a head item holding the sequence number of their last
// committed event. A commit of n events writes them at head+1 … head+n and
// moves the head from head to head+n under the condition that it is still
// at head, in the same transaction. So sequence numbers are handed out in
// commit order with no gaps, and no event can commit at or below a
// sequence number already committed: once a page has shown position p,
// nothing at or before p can appear later (docs/design.md has the whole
// argument).
//
// The environment remembers the last head it saw of each user, so that the
// common case (a user's writes reaching an environment that saw their last
// one) is one call. When another environment moved the head meanwhile, the
// failed condition returns the head item, and the commit is made again at
// the real head: two calls.
type EventLog struct {
	ledger *Ledger
	events *Events
	heads  *headCache
}

var _ idempotency.Store[syncevent.Event] = (*EventLog)(nil)

// maxHeadAttempts bounds the attempts of one Commit against a head other
// writers keep moving; past it the commit reports a conflict, which the
// flow retries after a backoff.
const maxHeadAttempts = 8

// NewEventLog returns the EventLog of ledger and events.
func NewEventLog(ledger *Ledger, events *Events) *EventLog {
	return &EventLog{ledger: ledger, events: events, heads: newHeadCache(maxCachedHeads)}
}

// Commit stores evs at the next positions of rec.UserID's commit order,
// each conditioned on its id being new for its user, with rec. A
// *idempotency.WriteConditionError's Indexes are into evs.
func (l *EventLog) Commit(ctx context.Context, rec idempotency.Record, evs []syncevent.Event, now time.Time) error {
	user, n := rec.UserID, uint64(len(evs))
	head := l.heads.get(user)
	for attempt := 1; ; attempt++ {
		writes := make([]types.TransactWriteItem, 0, len(evs)+1)
		for i, ev := range evs {
			ev.Position = syncevent.At(head + uint64(i) + 1)
			writes = append(writes, l.events.PutNew(ev))
		}
		writes = append(writes, l.events.advanceHead(user, head, head+n))
		err := l.ledger.commit(ctx, rec, writes, now)
		var failed *writesFailed
		if !errors.As(err, &failed) {
			if err == nil {
				l.heads.put(user, head+n)
			}
			return err
		}
		headItem, eventsFailed := splitHeadFailure(failed, len(evs))
		if eventsFailed != nil {
			return &idempotency.WriteConditionError{Indexes: eventsFailed}
		}
		if attempt == maxHeadAttempts {
			return fmt.Errorf("%w: the head of the user's events kept moving", idempotency.ErrTransactionConflict)
		}
		if head, err = l.realHead(ctx, user, headItem); err != nil {
			return err
		}
		l.heads.put(user, head)
	}
}

// splitHeadFailure separates the failed head (write headIndex; its item,
// if the backend returned it) from failed events.
func splitHeadFailure(f *writesFailed, headIndex int) (headItem map[string]types.AttributeValue, events []int) {
	for i, ix := range f.indexes {
		if ix == headIndex {
			headItem = f.items[i]
		} else {
			events = append(events, ix)
		}
	}
	return headItem, events
}

// realHead is the head a failed condition returned, or, from a backend
// that returns no item with a failed transactional condition, the head
// read again.
func (l *EventLog) realHead(ctx context.Context, user string, item map[string]types.AttributeValue) (uint64, error) {
	if len(item) == 0 {
		return l.events.Head(ctx, user)
	}
	return decodeHead(item)
}

// Get reads a ledger record.
func (l *EventLog) Get(ctx context.Context, userID, key string) (idempotency.Record, bool, error) {
	return l.ledger.Get(ctx, userID, key)
}

// maxCachedHeads bounds the heads an environment remembers: a few hundred
// kilobytes at most.
const maxCachedHeads = 16 << 10

// headCache is the last head an environment saw of each user. A wrong
// entry costs one more call, never a wrong position: the head's condition
// is what decides.
type headCache struct {
	mu    sync.Mutex
	max   int
	heads map[string]uint64
}

func newHeadCache(max int) *headCache { return &headCache{max: max, heads: map[string]uint64{}} }

func (c *headCache) get(user string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heads[user]
}

func (c *headCache) put(user string, head uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.heads[user]; !ok && len(c.heads) >= c.max {
		for other := range c.heads { // map order: an arbitrary user goes
			delete(c.heads, other)
			break
		}
	}
	c.heads[user] = head
}
