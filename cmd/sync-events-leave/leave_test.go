package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

func pullSpace(t *testing.T, hs *apitest.Harness, space, user string) ([]apitest.ListedEvent, int) {
	t.Helper()
	evs, _, last := hs.Walk("/api/v1/spaces/"+space+"/events", user, "", 1000)
	return evs, last.StatusCode
}

// TestLeaveAllDeletesTheUsersEventsAndLeavesEverySpace: the user to erase
// writes in a space they share and in one they alone own. The command
// tombstones every event of theirs in both, leaves the first (the other
// members see it and keep their own events), and stays in the second,
// whose last owner they are, saying so and reporting failure; run again
// it does nothing more. Its output names spaces, never the user.
func TestLeaveAllDeletesTheUsersEventsAndLeavesEverySpace(t *testing.T) {
	hs := apitest.New(t)
	alice, bob := "alice-"+uuid.NewString(), "bob|"+uuid.NewString() // a sub with a character escaped in a path
	create := func(owner string) string {
		id := uuid.NewString()
		apitest.WantResponse(t, hs.Call("POST", api.SpacesPath, owner, uuid.NewString(), `{"id":"`+id+`","name":"List"}`), 201, "")
		return id
	}
	post := func(space, by string) string {
		id := uuid.NewString()
		apitest.WantResponse(t, hs.Call("POST", "/api/v1/spaces/"+space+"/events", by, uuid.NewString(), apitest.EventBody(t, id)), 201, "")
		return id
	}
	shared := create(alice)
	apitest.WantResponse(t, hs.Call("POST", "/api/v1/spaces/"+shared+"/members", alice, uuid.NewString(), `{"member":"`+bob+`","role":"writer"}`), 201, "")
	bobs := []string{post(shared, bob), post(shared, bob)}
	alices := post(shared, alice)
	own := create(bob)
	bobsOwn := post(own, bob)

	var out bytes.Buffer
	all, err := leaveAll(context.Background(), hs.H, drainer(eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}), bob, &out)
	if err != nil || all {
		t.Fatalf("leaveAll = %v, %v; want not all left (the last owner stays), no error\n%s", all, err, out.String())
	}
	if strings.Contains(out.String(), bob) || strings.Contains(out.String(), url.PathEscape(bob)) {
		t.Errorf("the output names the user:\n%s", out.String())
	}
	for _, want := range []string{"space " + shared + ": 2 events deleted, left", "space " + own + ": 1 events deleted, not left: SPACE_LAST_OWNER"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// The shared space as alice sees it: bob's events are tombstones
	// naming no one, hers is whole, and bob's leaving is in the stream.
	evs, status := pullSpace(t, hs, shared, alice)
	if status != 200 {
		t.Fatalf("alice's pull: %d", status)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
		switch {
		case slices.Contains(bobs, ev.ID) && (!ev.Deleted || ev.Author != "" || string(ev.Payload) != "{}"):
			t.Errorf("bob's event %s: deleted %v, author %q, payload %s", ev.ID, ev.Deleted, ev.Author, ev.Payload)
		case ev.ID == alices && (ev.Deleted || ev.Author != alice):
			t.Errorf("alice's event was touched: %+v", ev)
		case syncevent.Reserved(ev.Type):
			// the service's own record (membership changes, deletion
			// notices) keeps who did what: see operations.md
		case ev.Author == bob:
			t.Errorf("an event still by bob: %+v", ev)
		}
	}
	if types[len(types)-1] != "space.member_removed" {
		t.Errorf("the stream ends %v, want bob's leaving last", types)
	}
	if _, status := pullSpace(t, hs, shared, bob); status != 403 {
		t.Errorf("bob's pull of the space he left: %d, want 403", status)
	}
	// His own space: his event is gone, he is still its owner.
	evs, _ = pullSpace(t, hs, own, bob)
	for _, ev := range evs {
		if ev.ID == bobsOwn && !ev.Deleted {
			t.Errorf("bob's event in his own space is not deleted")
		}
	}
	var listing struct{ Spaces []struct{ ID, Role string } }
	resp := hs.Call("GET", api.SpacesPath, bob, "", "")
	if err := json.Unmarshal([]byte(resp.Body), &listing); err != nil || len(listing.Spaces) != 1 || listing.Spaces[0].ID != own {
		t.Errorf("bob's spaces after: %s", resp.Body)
	}

	// Again: nothing more to delete, the same refusal.
	out.Reset()
	all, err = leaveAll(context.Background(), hs.H, drainer(eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}), bob, &out)
	if err != nil || all || !strings.Contains(out.String(), "space "+own+": 0 events deleted, not left: SPACE_LAST_OWNER") || strings.Contains(out.String(), shared) {
		t.Errorf("run again: %v, %v\n%s", all, err, out.String())
	}
	// A user in no space: nothing to do, and that is success.
	out.Reset()
	if all, err := leaveAll(context.Background(), hs.H, drainer(eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}), "carol", &out); err != nil || !all || !strings.Contains(out.String(), "in no space") {
		t.Errorf("carol: %v, %v\n%s", all, err, out.String())
	}
}

// TestLeaveAllDeletesTheUsersAcceptedEventsToo: in a busy space, the
// user's last writes were accepted and are not placed yet (no sequencer
// runs here, as when the sequencer function is behind). The command
// places them before it lists the space, so they are deleted with the
// rest, instead of being placed by the removal, after the deletes, and
// kept.
func TestLeaveAllDeletesTheUsersAcceptedEventsToo(t *testing.T) {
	hs := apitest.NewAccepting(t)
	alice, bob := "alice", "bob"
	space := uuid.NewString()
	apitest.WantResponse(t, hs.Call("POST", api.SpacesPath, alice, uuid.NewString(), `{"id":"`+space+`","name":"List"}`), 201, "")
	apitest.WantResponse(t, hs.Call("POST", "/api/v1/spaces/"+space+"/members", alice, uuid.NewString(), `{"member":"`+bob+`","role":"writer"}`), 201, "")
	hs.YieldHead(space, time.Minute) // every write to the space is accepted
	var bobs []string
	for range 3 {
		id := uuid.NewString()
		apitest.WantResponse(t, hs.Call("POST", "/api/v1/spaces/"+space+"/events", bob, uuid.NewString(), apitest.EventBody(t, id)), 201, "")
		bobs = append(bobs, id)
	}
	if hs.Accepts() != 3 {
		t.Fatalf("%d of bob's 3 writes accepted", hs.Accepts())
	}
	var out bytes.Buffer
	all, err := leaveAll(context.Background(), hs.H, drainer(eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}), bob, &out)
	if err != nil || !all || !strings.Contains(out.String(), "3 events deleted, left") {
		t.Fatalf("leaveAll = %v, %v\n%s", all, err, out.String())
	}
	evs, _ := pullSpace(t, hs, space, alice)
	for _, ev := range evs {
		if slices.Contains(bobs, ev.ID) && (!ev.Deleted || ev.Author != "") {
			t.Errorf("bob's accepted event %s kept: deleted %v, author %q", ev.ID, ev.Deleted, ev.Author)
		}
	}
}
