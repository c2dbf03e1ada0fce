package api_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
)

// drainFrom pulls path (a stream's GET) from cursor, a page of limit at a
// time, until no more pages follow; it fails on any answer but 200 and on
// a page that moves nowhere (a stall).
func drainFrom(t *testing.T, hs *apitest.Harness, path, user, cursor string, limit int) (evs []apitest.ListedEvent, cursors []string) {
	t.Helper()
	evs, cursors, last := hs.Walk(path, user, cursor, limit)
	if last.StatusCode != 200 {
		t.Fatalf("GET %s from %q: %d %s", path, cursor, last.StatusCode, last.Body)
	}
	return evs, cursors
}

// TestDeletedEventsLeaveTombstonesNoPullerStallsAt: an event deleted keeps
// its position as a tombstone with its payload erased, and a notice at the
// stream's next position names it; a puller resuming from any cursor given
// before or after the deletion reaches the end, sees no deleted payload,
// and learns of the deletion. A replay of the delete's key answers the same.
func TestDeletedEventsLeaveTombstonesNoPullerStallsAt(t *testing.T) {
	hs := apitest.New(t)
	const user = "alice"
	ids := make([]string, 5)
	for i := range ids {
		ids[i] = uuid.NewString()
		apitest.WantResponse(t, hs.Post(user, uuid.NewString(), apitest.EventBody(t, ids[i])), 201, "")
	}
	_, before := drainFrom(t, hs, api.EventsPath, user, "", 1)
	before = append([]string{""}, before...)

	victim := api.EventsPath + "/" + ids[2]
	key := uuid.NewString()
	first := hs.Call("DELETE", victim, user, key, "")
	apitest.WantResponse(t, first, 200, "")
	again := hs.NewEnvironment().Call("DELETE", victim, user, key, "")
	if again.StatusCode != 200 || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("the delete's retry: %d %s %v", again.StatusCode, again.Body, again.Headers)
	}
	apitest.WantResponse(t, hs.Call("DELETE", victim, user, uuid.NewString(), ""), 409, "EVENT_ALREADY_DELETED")
	apitest.WantResponse(t, hs.Call("DELETE", api.EventsPath+"/"+uuid.NewString(), user, uuid.NewString(), ""), 404, "EVENT_NOT_FOUND")
	apitest.WantResponse(t, hs.Call("DELETE", victim, "bob", uuid.NewString(), ""), 404, "EVENT_NOT_FOUND") // another user's: not there for bob

	for _, cursor := range before {
		for _, limit := range []int{1, 2, 7} {
			evs, _ := drainFrom(t, hs, api.EventsPath, user, cursor, limit)
			notified := false
			for _, ev := range evs {
				switch {
				case ev.ID == ids[2] && (!ev.Deleted || string(ev.Payload) != "{}"):
					t.Errorf("from %q: the deleted event with payload %s, deleted %v", cursor, ev.Payload, ev.Deleted)
				case ev.ID != ids[2] && ev.Deleted:
					t.Errorf("from %q: %s marked deleted", cursor, ev.ID)
				case ev.Type == "event.deleted":
					notified = notified || strings.Contains(string(ev.Payload), ids[2])
				}
			}
			if !notified || evs[len(evs)-1].Type != "event.deleted" {
				t.Errorf("from %q, %d a page: the deletion's notice is not last: %+v", cursor, limit, evs)
			}
		}
	}
}

// TestWhoMayDeleteInASpace: an owner any event, a writer their own, a
// reader or an outsider none; nothing recorded for a refusal.
func TestWhoMayDeleteInASpace(t *testing.T) {
	hs := apitest.New(t)
	s := newSpace(t, hs, "alice")
	apitest.WantResponse(t, s.add(t, "alice", "bob", "writer"), 201, "")
	apitest.WantResponse(t, s.add(t, "alice", "carol", "reader"), 201, "")
	resp, alices := s.post(t, "alice")
	apitest.WantResponse(t, resp, 201, "")
	resp, bobs := s.post(t, "bob")
	apitest.WantResponse(t, resp, 201, "")
	at := func(id string) string { return s.path(api.SpaceEventsPath) + "/" + id }

	ledger := hs.LedgerCount()
	apitest.WantResponse(t, hs.Call("DELETE", at(alices), "bob", uuid.NewString(), ""), 403, "SPACE_ROLE_FORBIDS")
	apitest.WantResponse(t, hs.Call("DELETE", at(bobs), "carol", uuid.NewString(), ""), 403, "SPACE_ROLE_FORBIDS")
	apitest.WantResponse(t, hs.Call("DELETE", at(bobs), "mallory", uuid.NewString(), ""), 403, "SPACE_NOT_MEMBER")
	if hs.LedgerCount() != ledger {
		t.Errorf("refused deletions recorded keys")
	}
	apitest.WantResponse(t, hs.Call("DELETE", at(bobs), "bob", uuid.NewString(), ""), 200, "")
	apitest.WantResponse(t, hs.Call("DELETE", at(alices), "alice", uuid.NewString(), ""), 200, "")
	ids, types, authors, _ := s.pull(t, "carol")
	n := len(types)
	if n < 2 || types[n-1] != "event.deleted" || types[n-2] != "event.deleted" {
		t.Fatalf("the space's stream ends %v, want two notices", types)
	}
	for i, id := range ids {
		if (id == bobs || id == alices) && authors[i] != "" {
			t.Errorf("the tombstone of %s still names its author %q", id, authors[i])
		}
	}
	// The service's own events are no one's to delete: not a notice (it
	// would hide the deletion it tells), not a membership change.
	apitest.WantResponse(t, hs.Call("DELETE", at(ids[n-1]), "alice", uuid.NewString(), ""), 409, "EVENT_NOT_DELETABLE")
	apitest.WantResponse(t, hs.Call("DELETE", at(ids[0]), "alice", uuid.NewString(), ""), 409, "EVENT_NOT_DELETABLE")
}
