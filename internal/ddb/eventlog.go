package ddb

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/idempotency"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// EventLog stores new events together with their ledger record, in one
// transaction: it implements idempotency.Store for events.
type EventLog struct {
	ledger *Ledger
	events *Events
}

var _ idempotency.Store[syncevent.Event] = (*EventLog)(nil)

// NewEventLog returns the EventLog of ledger and events.
func NewEventLog(ledger *Ledger, events *Events) *EventLog {
	return &EventLog{ledger: ledger, events: events}
}

// Commit stores evs, each conditioned on its id being new for its user,
// with rec. A *idempotency.WriteConditionError's Indexes are into evs.
func (l *EventLog) Commit(ctx context.Context, rec idempotency.Record, evs []syncevent.Event, now time.Time) error {
	writes := make([]types.TransactWriteItem, len(evs))
	for i, ev := range evs {
		writes[i] = l.events.PutNew(ev)
	}
	return l.ledger.Commit(ctx, rec, writes, now)
}

// Get reads a ledger record.
func (l *EventLog) Get(ctx context.Context, userID, key string) (idempotency.Record, bool, error) {
	return l.ledger.Get(ctx, userID, key)
}
