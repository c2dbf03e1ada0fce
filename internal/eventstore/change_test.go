package eventstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Each operation, committed in turn to one space by its caller, writes
// the event it names with the payload its fields make, or is refused with
// the error its constructor documents, writing nothing.
func TestOperationsCommitTheirEvents(t *testing.T) {
	b := ddbtest.Start(t)
	store := eventstore.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{})
	ctx := context.Background()
	space := eventstore.SpaceStream(uuid.NewString())
	note := syncevent.Event{Stream: space, ID: uuid.NewString(), Type: "note.created", OccurredAt: "2026-12-02T14:03:00Z",
		Payload: []byte(`{"title":"Groceries"}`)}
	commit := func(caller string, changes ...eventstore.Change) error {
		now := time.Now().UTC()
		rec := idempotency.Record{UserID: caller, Key: uuid.NewString(), PayloadHash: "-", StatusCode: 200, ResponseBody: []byte(`{}`),
			Method: "POST", Route: "/test", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		return store.Commit(ctx, rec, changes, now)
	}
	last := func(t *testing.T) syncevent.Event {
		t.Helper()
		var out syncevent.Event
		for ev, err := range store.Read(ctx, space, syncevent.Position{}, 100) {
			if err != nil {
				t.Fatal(err)
			}
			out = ev
		}
		return out
	}
	for _, step := range []struct {
		name    string
		caller  string
		change  eventstore.Change
		want    error  // nil: committed
		typ     string // the event written, when committed
		payload string
	}{
		{"create", "alice", eventstore.CreateSpace(space, "Plans"), nil, syncevent.SpaceCreatedType, `{"name":"Plans"}`},
		{"create again", "alice", eventstore.CreateSpace(space, "Plans"), eventstore.ErrSpaceExists, "", ""},
		{"add a writer", "alice", eventstore.AddMember(space, "bob", eventstore.RoleWriter), nil, syncevent.MemberAddedType, `{"member":"bob","role":"writer"}`},
		{"add again", "alice", eventstore.AddMember(space, "bob", eventstore.RoleReader), eventstore.ErrAlreadyMember, "", ""},
		{"add oneself", "alice", eventstore.AddMember(space, "alice", eventstore.RoleReader), eventstore.ErrAlreadyMember, "", ""},
		{"add, not an owner", "bob", eventstore.AddMember(space, "dan", eventstore.RoleReader), eventstore.ErrRoleForbids, "", ""},
		{"a writer appends", "bob", eventstore.Append(note), nil, note.Type, string(note.Payload)},
		{"a stranger appends", "eve", eventstore.Append(note), eventstore.ErrNotMember, "", ""},
		{"delete an event not there", "bob", eventstore.Delete(space, uuid.NewString()), eventstore.ErrEventNotFound, "", ""},
		{"a writer deletes their own", "bob", eventstore.Delete(space, note.ID), nil, syncevent.DeletedType, `{"id":"` + note.ID + `"}`},
		{"delete again", "alice", eventstore.Delete(space, note.ID), eventstore.ErrAlreadyDeleted, "", ""},
		{"remove no member", "alice", eventstore.RemoveMember(space, "dan"), eventstore.ErrNoSuchMember, "", ""},
		{"remove, the role read", "alice", eventstore.RemoveMember(space, "bob"), nil, syncevent.MemberRemovedType, `{"member":"bob","role":"writer"}`},
		{"add a reader", "alice", eventstore.AddMember(space, "carol", eventstore.RoleReader), nil, syncevent.MemberAddedType, `{"member":"carol","role":"reader"}`},
		{"a reader appends", "carol", eventstore.Append(note), eventstore.ErrRoleForbids, "", ""},
		{"leave", "carol", eventstore.Leave(space), nil, syncevent.MemberRemovedType, `{"member":"carol","role":"reader"}`},
		{"leave again", "carol", eventstore.Leave(space), eventstore.ErrNotMember, "", ""},
		{"the last owner leaves", "alice", eventstore.Leave(space), eventstore.ErrLastOwner, "", ""},
	} {
		t.Run(step.name, func(t *testing.T) {
			before := last(t)
			err := commit(step.caller, step.change)
			if !errors.Is(err, step.want) || (step.want == nil) != (err == nil) {
				t.Fatalf("commit: %v, want %v", err, step.want)
			}
			got := last(t)
			if step.want != nil {
				if got.ID != before.ID {
					t.Errorf("a refused change wrote %+v", got)
				}
				return
			}
			if got.ID == before.ID || got.Type != step.typ || string(got.Payload) != step.payload || got.Author != step.caller {
				t.Errorf("wrote %s by %q %s, want %s by %q %s", got.Type, got.Author, got.Payload, step.typ, step.caller, step.payload)
			}
		})
	}
}

// A commit makes one change, of at least one event: no more, no less.
func TestCommitMakesOneChange(t *testing.T) {
	b := ddbtest.Start(t)
	store := eventstore.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{})
	ev := syncevent.Event{Stream: "alice", ID: uuid.NewString(), Type: "note.created", OccurredAt: "2026-12-02T14:03:00Z", Payload: []byte(`{}`)}
	for _, c := range []struct {
		name    string
		changes []eventstore.Change
	}{
		{"none", nil},
		{"two", []eventstore.Change{eventstore.Append(ev), eventstore.Append(ev)}},
		{"no events", []eventstore.Change{eventstore.Append()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Now().UTC()
			rec := idempotency.Record{UserID: "alice", Key: uuid.NewString(), PayloadHash: "-", StatusCode: 201, ResponseBody: []byte(`{}`),
				Method: "POST", Route: "/test", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := store.Commit(context.Background(), rec, c.changes, now); err == nil {
				t.Fatal("committed")
			}
			if stored := b.StoredEvents(t); len(stored) != 0 {
				t.Errorf("stored %d events", len(stored))
			}
		})
	}
}
