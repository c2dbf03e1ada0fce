package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/internal/apitest"
	"github.com/sync-events/sync-events/internal/eventlog"
	"github.com/sync-events/sync-events/internal/ratelimit"
)

// pullAll pages path (a stream's GET) from cursor, limit a time, to the
// end, and returns the events and the cursors handed out, or the refusal
// that stopped it; it fails on a page that moves nowhere (a stall).
func pullAll(t *testing.T, hs *apitest.Harness, path, user, cursor string, limit int) (evs []pulledEvent, cursors []string, status int, code string) {
	t.Helper()
	for range 1000 {
		q := fmt.Sprintf("%s?limit=%d", path, limit)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		resp := hs.Call("GET", q, user, "", "")
		if resp.StatusCode != 200 {
			var e struct{ Error string }
			_ = json.Unmarshal([]byte(resp.Body), &e)
			return evs, cursors, resp.StatusCode, e.Error
		}
		var page struct {
			Events  []pulledEvent
			Cursor  string
			HasMore bool
		}
		if err := json.Unmarshal([]byte(resp.Body), &page); err != nil {
			t.Fatal(err)
		}
		if page.HasMore && page.Cursor == cursor {
			t.Fatalf("a stall at cursor %q", cursor)
		}
		evs, cursor = append(evs, page.Events...), page.Cursor
		cursors = append(cursors, cursor)
		if !page.HasMore {
			return evs, cursors, 200, ""
		}
	}
	t.Fatal("no end")
	return nil, nil, 0, ""
}

func pulledIDs(evs []pulledEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// TestPullersAcrossARetentionFloor: once retention has removed a stream's
// oldest events (a tombstone among them), a puller resuming from any
// cursor below the floor is answered 410 CURSOR_EXPIRED and nothing else;
// from the floor or above it reads on to the end, each event once; and
// starting over from the start reads exactly what stayed, beginning just
// above the floor. In a user's stream and in a space's.
func TestPullersAcrossARetentionFloor(t *testing.T) {
	hs := apitest.New(t)
	log := eventlog.New(hs.B.Client, hs.B.Tables.Events, hs.B.Ledger(), ratelimit.Bucket{})
	s := newSpace(t, hs, "alice")
	apitest.WantResponse(t, s.add(t, "alice", "bob", "reader"), 201, "")
	streams := []struct {
		name, stream, path, reader string
		post                       func() string // posts an event, returns its id
		del                        func(id string)
	}{
		{
			name: "user", stream: "alice", path: api.EventsPath, reader: "alice",
			post: func() string {
				id := uuid.NewString()
				apitest.WantResponse(t, hs.Post("alice", uuid.NewString(), apitest.EventBody(t, id)), 201, "")
				return id
			},
			del: func(id string) {
				apitest.WantResponse(t, hs.Call("DELETE", api.EventsPath+"/"+id, "alice", uuid.NewString(), ""), 200, "")
			},
		},
		{
			name: "space", stream: "space#" + s.id, path: s.path(api.SpaceEventsPath), reader: "bob",
			post: func() string {
				resp, id := s.post(t, "alice")
				apitest.WantResponse(t, resp, 201, "")
				return id
			},
			del: func(id string) {
				apitest.WantResponse(t, hs.Call("DELETE", s.path(api.SpaceEventsPath)+"/"+id, "alice", uuid.NewString(), ""), 200, "")
			},
		},
	}
	for _, st := range streams {
		t.Run(st.name, func(t *testing.T) {
			posted := make([]string, 7)
			for i := range posted {
				posted[i] = st.post()
			}
			st.del(posted[1])
			// Every cursor a device could hold: the start, then one after
			// each position.
			all, cursors := drainFrom(t, hs, st.path, st.reader, "", 1)
			cursors = append([]string{""}, cursors...)
			const floor = 5
			res, err := log.Trim(context.Background(), st.stream, time.Now().Add(time.Hour), floor)
			if err != nil || res.Floor != floor {
				t.Fatalf("Trim = %+v, %v; want the floor at %d", res, err, floor)
			}
			stayed := pulledIDs(all[floor:])
			for at, cursor := range cursors {
				for _, limit := range []int{1, 3, 50} {
					evs, _, status, code := pullAll(t, hs, st.path, st.reader, cursor, limit)
					switch {
					case cursor == "":
						if status != 200 || !slices.Equal(pulledIDs(evs), stayed) {
							t.Errorf("from the start, %d a page: %d %s %v, want %v", limit, status, code, pulledIDs(evs), stayed)
						}
					case at < floor:
						if status != 410 || code != "CURSOR_EXPIRED" || len(evs) > 0 {
							t.Errorf("from position %d, below the floor: %d %s, %d events; want 410 CURSOR_EXPIRED and nothing", at, status, code, len(evs))
						}
					default:
						if status != 200 || !slices.Equal(pulledIDs(evs), pulledIDs(all[at:])) {
							t.Errorf("from position %d: %d %s %v, want %v", at, status, code, pulledIDs(evs), pulledIDs(all[at:]))
						}
					}
					for _, ev := range evs {
						if ev.ID == posted[1] {
							t.Errorf("the trimmed tombstone %s is listed", ev.ID)
						}
					}
				}
			}
		})
	}
}
