package eventstore

import (
	"context"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/syncevent"
)

// Change is what one commit makes, built by an operation: Append, Delete,
// CreateSpace, AddMember, RemoveMember or Leave. It carries what the
// operation's guard needs as fields of its own; the events of the
// service's own operations (a deletion's notice, a membership change) and
// their payloads are made once, at commit, with what the guard read.
// Store.Commit makes one Change per request.
type Change struct {
	stream string
	op     operation
}

// Stream is the stream the change commits to.
func (c Change) Stream() string { return c.stream }

// operation is one kind of change. Adding one is a type with its plan and
// a constructor that returns it in a Change.
type operation interface {
	// plan builds the guard of the change's commit to stream by caller
	// at at (nil: none), reading what it needs, and the events it writes.
	plan(ctx context.Context, t Table, stream, caller string, at time.Time) (*guard, []syncevent.Event, error)
}

// Append is the change that commits evs, of one stream (their Stream), at
// its next positions. In a space the caller must be an owner or a writer
// (ErrNotMember, ErrRoleForbids), and a busy space's writes are accepted,
// to be sequenced, instead of committed at the head. Commit refuses an
// event whose id the stream holds already with an
// *idempotency.WriteConditionError whose indexes are into evs.
func Append(evs ...syncevent.Event) Change {
	c := Change{op: appendEvents(evs)}
	if len(evs) > 0 {
		c.stream = evs[0].Stream
	}
	return c
}

type appendEvents []syncevent.Event

func (a appendEvents) plan(_ context.Context, t Table, stream, caller string, _ time.Time) (*guard, []syncevent.Event, error) {
	if !IsSpaceStream(stream) {
		return nil, a, nil
	}
	g := newGuard(t, stream, caller)
	checkRole(g, t, stream, caller, RoleOwner, RoleWriter)
	g.mayAccept = true
	return g, a, nil
}

// serviceEvent is an event of the service's own of type typ (one of
// syncevent.ReservedTypes) in stream at at, its payload p's JSON.
func serviceEvent(stream, typ string, at time.Time, p any) ([]syncevent.Event, error) {
	payload, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return []syncevent.Event{newServiceEvent(stream, typ, at, payload)}, nil
}

// newServiceEvent is serviceEvent with its payload made.
func newServiceEvent(stream, typ string, at time.Time, payload []byte) syncevent.Event {
	at = at.Truncate(time.Millisecond)
	return syncevent.Event{
		Stream: stream, ID: uuid.NewString(), Type: typ, OccurredAt: at.UTC().Format(syncevent.TimestampLayout),
		ReceivedAt: at, Payload: payload,
	}
}
