package api_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"

	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// The edges of every limit POST accepts, as parts of an event.
var (
	edgeStrings = []string{
		``, `\u0000`, `\u001f`, "\u007f", "\u0080", "\u07ff", "\u0800", "\ufdcf", "\ufdf0", "\ufffd", "\uffef",
		"\U00010000", "\U0010fffd", `\ud83d\ude00`, `\udbff\udffc`, "\u2028\u2029", `\"\\\/\b\f\n\r\t`, `</script>&amp;`,
	}
	edgeNumbers = []string{
		"0", "-0", "-0.0", "1E+2", "1e-400", "5e-324", "1.7976931348623157e308", "-1.7976931348623157E+308",
		"9007199254740993", "123456789012345678901234567890", "0.10000000000000001", "1.50", "-1.5e-7", "1e0",
	}
	edgeTimes = []string{
		"2026-12-02T14:03:00Z", "2026-12-02t14:03:00z", "2016-12-31T23:59:60Z", "1990-12-31T15:59:60-08:00",
		"2024-02-29T00:00:00+23:59", "0000-01-01T00:00:00-23:59", "9999-12-31T23:59:59.999999999Z",
		"2026-12-02T14:03:00." + strings.Repeat("9", syncevent.MaxOccurredAtLen-21) + "Z",
	}
	edgeTypes = []string{
		"t", strings.Repeat("x", syncevent.MaxTypeLen), strings.Repeat("\U0001F600", syncevent.MaxTypeLen),
		strings.Repeat("\u0001", syncevent.MaxTypeLen), strings.Repeat(`"`, syncevent.MaxTypeLen), "note.created",
	}
	// Fillers of the largest bodies: each grows differently on the way to
	// the Lambda response.
	edgeFillers = []string{"x", `\"`, `\\`, "\u2028", `\u0001`, "\U0010fffd", "é"}
)

// edgePayload is a payload drawn from the edges: every string and number
// edge in names and values, nested to depth (at least 2: the numbers are
// an array).
func edgePayload(r *rand.Rand, depth int) string {
	var members []string
	for _, s := range edgeStrings {
		members = append(members, fmt.Sprintf(`"k%s":"%s"`, s, s))
	}
	members = append(members, `"nums":[`+strings.Join(edgeNumbers, ",")+`]`)
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	inner := "{" + strings.Join(members, ",") + "}"
	if depth <= 2 {
		return inner
	}
	return `{"d":` + strings.Repeat("[", depth-3) + inner + strings.Repeat("]", depth-3) + "}"
}

// edgeEvents are valid events at the edges of every limit POST accepts.
func edgeEvents(t testing.TB, r *rand.Rand) []sentEvent {
	var out []sentEvent
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	out = append(out, event(`{}`))
	for _, depth := range []int{2, 3, syncevent.MaxPayloadDepth / 2, syncevent.MaxPayloadDepth} {
		for range 4 {
			e := event(edgePayload(r, depth))
			e.Type, e.OccurredAt = pick(edgeTypes), pick(edgeTimes)
			out = append(out, e)
		}
	}
	for _, filler := range edgeFillers {
		e := event(`{}`)
		e.Type, e.OccurredAt = pick(edgeTypes), pick(edgeTimes)
		out = append(out, pad(t, e, config.DefaultMaxBodyBytes, filler))
	}
	for _, n := range edgeNumbers {
		out = append(out, event(`{"n":`+n+`}`))
	}
	for _, at := range edgeTimes {
		e := event(`{}`)
		e.OccurredAt = at
		out = append(out, e)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestPushThenPullAtEveryLimit posts valid events at the edge of every
// limit POST accepts, replays each, then walks GET at several page sizes:
// every event comes back as sent, once, in order, and no page fails or
// passes the byte budget.
func TestPushThenPullAtEveryLimit(t *testing.T) {
	hs := apitest.New(t)
	r := rand.New(rand.NewPCG(8, 8))
	sent := edgeEvents(t, r)
	for i, e := range sent {
		key := uuid.NewString()
		first := hs.Post("edges", key, e.body())
		if first.StatusCode != 201 {
			t.Fatalf("event %d (%d bytes): %d %.300s", i, len(e.body()), first.StatusCode, first.Body)
		}
		if again := hs.Post("edges", key, e.body()); again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
			t.Fatalf("event %d: replay %d %.300s", i, again.StatusCode, again.Body)
		}
	}
	for _, limit := range []int{1, 3, api.DefaultPageSize, api.MaxPageSize} {
		wantListed(t, walk(hs, "edges", limit), sent)
	}
	// The same edges again, as the largest batches they make.
	again := edgeEvents(t, r)
	batches := largestBatches(again)
	for i, b := range batches {
		key, body := uuid.NewString(), batchOf(b)
		first := postBatch(hs, "edges-batched", key, body)
		if first.StatusCode != 201 {
			t.Fatalf("batch %d (%d events, %d bytes): %d %.300s", i, len(b), len(body), first.StatusCode, first.Body)
		}
		if replay := postBatch(hs, "edges-batched", key, body); replay.Body != first.Body || replay.Headers["Idempotent-Replayed"] != "true" {
			t.Fatalf("batch %d: replay %d %.300s", i, replay.StatusCode, replay.Body)
		}
	}
	for _, limit := range []int{1, 3, api.DefaultPageSize, api.MaxPageSize} {
		wantListed(t, walk(hs, "edges-batched", limit), again)
	}
	t.Logf("%d events at the edges, sent alone and in %d batches, walked at 4 page sizes", len(sent), len(batches))
}

// largestBatches cuts sent, in order, into the largest batches the batch
// endpoint takes: at most MaxBatchEvents events and MaxBatchBodyBytes.
func largestBatches(sent []sentEvent) [][]sentEvent {
	var out [][]sentEvent
	var cur []sentEvent
	for _, e := range sent {
		if len(cur) == api.MaxBatchEvents || len(batchOf(append(cur, e))) > api.MaxBatchBodyBytes {
			out, cur = append(out, cur), nil
		}
		cur = append(cur, e)
	}
	return append(out, cur)
}

// FuzzPushThenPull: any payload, type and occurredAt. Never a 5xx; what is
// answered 201 is listed back as sent, alone on its page; what is refused
// leaves nothing to list.
func FuzzPushThenPull(f *testing.F) {
	hs := apitest.New(f)
	f.Fuzz(func(t *testing.T, payload []byte, typ, occurredAt string) {
		hs := hs.ForTest(t)
		e := sentEvent{ID: uuid.NewString(), Type: strings.ToValidUTF8(typ, "\ufffd"),
			OccurredAt: strings.ToValidUTF8(occurredAt, "\ufffd"), Payload: string(payload)}
		user, key := "fuzz-"+uuid.NewString(), uuid.NewString()
		resp := hs.Post(user, key, e.body())
		if resp.StatusCode >= 500 {
			t.Fatalf("%d %s", resp.StatusCode, resp.Body)
		}
		got := walk(hs, user, 1)
		if resp.StatusCode != 201 {
			if len(got) != 0 {
				t.Fatalf("refused with %d, yet %d events listed", resp.StatusCode, len(got))
			}
			return
		}
		wantListed(t, got, []sentEvent{e})
		// The embedded backend copies whole tables per transaction: keep
		// them small, so that executions stay fast as the run goes on.
		hs.Forget(user, key, e.ID)

		// The same event in a batch, after a plain one: both, or neither.
		plain := event(`{}`)
		e.ID = uuid.NewString()
		batched := []sentEvent{plain, e}
		user = "fuzz-" + uuid.NewString()
		resp = postBatch(hs, user, key, batchOf(batched))
		if resp.StatusCode != 201 {
			t.Fatalf("the event was stored alone, refused in a batch: %d %s", resp.StatusCode, resp.Body)
		}
		wantListed(t, walk(hs, user, 1), batched)
		for _, ev := range batched {
			hs.Forget(user, key, ev.ID)
		}
	})
}
