package simulation_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// target is a stream a simulation writes and pulls: a user's own, whose
// devices write it, or a space's, whose members do, every write at the
// head or on the busy-space path. What the simulations check holds for
// each the same.
type target struct {
	hs     *apitest.Harness
	stream string // the events table's stream: a user id or a space's
	path   string // the posts' and the pulls' path
	writer func(w int) string
	reader string
	// before is how many events the stream holds before the writes: a
	// space's creation and its members' adds.
	before int
	// busy is the busy-space path: writes found contended are accepted
	// and the harness's sequencer places them.
	busy bool
}

// checkPath fails the test if tg is the busy-space path and nothing was
// accepted and placed: the path under test was not taken.
func (tg target) checkPath(t *testing.T) {
	t.Helper()
	if tg.busy && tg.hs.Sequenced() == 0 {
		t.Error("no write was accepted and sequenced: the busy-space path was not taken")
	}
}

// targets are the streams a simulation runs on, each on fresh tables:
// a user's own (at the head), a space at the head (apitest.New), and a
// space on the busy-space path (apitest.NewSequenced), whose writers are
// writers members, the space's owner its reader.
func targets() []struct {
	name string
	make func(t *testing.T, writers int) target
} {
	return []struct {
		name string
		make func(t *testing.T, writers int) target
	}{
		{"user", func(t *testing.T, _ int) target {
			return target{hs: apitest.New(t), stream: "streamer", path: api.EventsPath,
				writer: func(int) string { return "streamer" }, reader: "streamer"}
		}},
		{"space/head", func(t *testing.T, writers int) target { return spaceTarget(t, apitest.New(t), writers) }},
		{"space/sequenced", func(t *testing.T, writers int) target {
			tg := spaceTarget(t, apitest.NewSequenced(t), writers)
			tg.busy = true
			return tg
		}},
	}
}

// spaceTarget makes a space on hs of an owner and writers members.
func spaceTarget(t *testing.T, hs *apitest.Harness, writers int) target {
	t.Helper()
	spaceID := uuid.NewString()
	if resp := spaceCall(t, hs, "POST", api.SpacesPath, "owner", `{"id":"`+spaceID+`","name":"simulated"}`); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	for w := range writers {
		body := fmt.Sprintf(`{"member":"w%d","role":"writer"}`, w)
		if resp := spaceCall(t, hs, "POST", "/api/v1/spaces/"+spaceID+"/members", "owner", body); resp.StatusCode != 201 {
			t.Fatalf("add: %d %s", resp.StatusCode, resp.Body)
		}
	}
	return target{hs: hs, stream: eventstore.SpaceStream(spaceID), path: "/api/v1/spaces/" + spaceID + "/events",
		writer: func(w int) string { return fmt.Sprintf("w%d", w) }, reader: "owner", before: 1 + writers}
}

// post is writer w's post of body under key, from env.
func (tg target) post(env *apitest.Harness, w int, key, body string) events.APIGatewayV2HTTPResponse {
	return env.Call("POST", tg.path, tg.writer(w), key, body)
}

// pull pages the stream as the reader from cursor, from env: the ids
// read, the cursors handed out, and the last answer.
func (tg target) pull(env *apitest.Harness, cursor string, limit int) (ids, cursors []string, last events.APIGatewayV2HTTPResponse) {
	evs, cursors, last := env.Walk(tg.path, tg.reader, cursor, limit)
	for _, ev := range evs {
		ids = append(ids, ev.ID)
	}
	return ids, cursors, last
}
