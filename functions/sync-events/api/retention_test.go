package api_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// pullAll pages path (a stream's GET) from cursor, limit a time, to the
// end: the events, or the status and code of the refusal that stopped it.
func pullAll(hs *apitest.Harness, path, user, cursor string, limit int) (evs []apitest.ListedEvent, status int, code string) {
	hs.T.Helper()
	evs, _, last := hs.Walk(path, user, cursor, limit)
	var e struct{ Error string }
	if last.StatusCode != 200 {
		_ = json.Unmarshal([]byte(last.Body), &e)
	}
	return evs, last.StatusCode, e.Error
}

func pulledIDs(evs []apitest.ListedEvent) []string {
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
	log := eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}
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
					evs, status, code := pullAll(hs, st.path, st.reader, cursor, limit)
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
