package api_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
)

// postBatch sends body to the batch endpoint.
func postBatch(hs *apitest.Harness, user, key, body string) events.APIGatewayV2HTTPResponse {
	hs.T.Helper()
	req := apitest.Request("POST", user, key, body)
	req.RawPath, req.RequestContext.HTTP.Path = api.BatchPath, api.BatchPath
	return hs.Do(req)
}

// batchOf is a batch body of sent, in order.
func batchOf(sent []sentEvent) string {
	parts := make([]string, len(sent))
	for i, e := range sent {
		parts[i] = e.body()
	}
	return `{"events":[` + strings.Join(parts, ",") + `]}`
}

// someEvents is n small events with fresh ids.
func someEvents(n int) []sentEvent {
	out := make([]sentEvent, n)
	for i := range out {
		out[i] = event(fmt.Sprintf(`{"n":%d}`, i))
	}
	return out
}

func ids(sent []sentEvent) []string {
	out := make([]string, len(sent))
	for i, e := range sent {
		out[i] = e.ID
	}
	return out
}

// errorDetails decodes an error answer's details into v.
func errorDetails(t testing.TB, resp events.APIGatewayV2HTTPResponse, v any) {
	t.Helper()
	var body struct{ Details json.RawMessage }
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil || json.Unmarshal(body.Details, v) != nil {
		t.Fatalf("details of %s: %v", resp.Body, err)
	}
}

func TestBatchStoresAllInOrderAndReplays(t *testing.T) {
	hs := apitest.New(t)
	sent := someEvents(5)
	key, body := uuid.NewString(), batchOf(sent)
	first := postBatch(hs, "alice", key, body)
	apitest.WantResponse(t, first, 201, "")
	var created struct {
		Events []struct{ ID, Type, OccurredAt, ReceivedAt string }
	}
	if err := json.Unmarshal([]byte(first.Body), &created); err != nil || len(created.Events) != len(sent) {
		t.Fatalf("answer %s: %v", first.Body, err)
	}
	for i, c := range created.Events {
		if c.ID != sent[i].ID || c.ReceivedAt == "" {
			t.Fatalf("answer event %d is %+v, sent %s", i, c, sent[i].ID)
		}
	}
	wantListed(t, walk(hs, "alice", 2), sent)

	again := postBatch(hs, "alice", key, body)
	if again.StatusCode != 201 || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("replay: %d %s %v", again.StatusCode, again.Body, again.Headers)
	}
	other := postBatch(hs, "alice", key, batchOf(someEvents(5)))
	if other.StatusCode != 409 || other.Body != `{"error":"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD","message":"Idempotency key already used with a different payload"}` {
		t.Fatalf("other body: %d %s", other.StatusCode, other.Body)
	}
	missing := postBatch(hs, "alice", "", body)
	if missing.StatusCode != 400 || missing.Body != `{"error":"VALIDATION_FAILED","message":"Idempotency-Key header is required"}` {
		t.Fatalf("no key: %d %s", missing.StatusCode, missing.Body)
	}
	wantListed(t, walk(hs, "alice", 100), sent)
	if n := hs.LedgerCount(); n != 1 {
		t.Fatalf("%d ledger records, want 1", n)
	}
}

func TestBatchRefusedWholeNamesEachProblem(t *testing.T) {
	hs := apitest.New(t)
	good := someEvents(3)
	dup := good[0]
	tests := []struct {
		name   string
		body   string
		status int
		code   errcode.Code
		want   []errcode.IndexedFieldError // for a 400 naming events
	}{
		{"bad fields", batchOf([]sentEvent{good[0], {ID: "nope", Type: "", OccurredAt: "x", Payload: "[]"}, good[1], {ID: uuid.NewString(), Type: "t", OccurredAt: "2026-12-02T14:03:00Z", Payload: "1"}}), 400, errcode.ValidationFailed,
			[]errcode.IndexedFieldError{{Index: 1}, {Index: 1}, {Index: 1}, {Index: 1}, {Index: 3}}},
		{"one id twice", batchOf([]sentEvent{good[0], good[1], dup}), 400, errcode.ValidationFailed, []errcode.IndexedFieldError{{Index: 2}}},
		{"no events", `{"events":[]}`, 400, errcode.ValidationFailed, nil},
		{"not a batch", `[` + good[0].body() + `]`, 400, errcode.ValidationFailed, nil},
		{"unknown member", `{"events":[` + good[0].body() + `],"more":1}`, 400, errcode.ValidationFailed, nil},
		{"one too many", batchOf(someEvents(api.MaxBatchEvents + 1)), 400, errcode.ValidationFailed, nil},
		{"an event over MAX_BODY_BYTES", batchOf([]sentEvent{good[0], event(`{"s":"` + strings.Repeat("x", config.DefaultMaxBodyBytes) + `"}`)}), 413, errcode.PayloadTooLarge, nil},
		{"body over the batch limit", batchOf(paddedEvents(t, 12, 180<<10)), 413, errcode.PayloadTooLarge, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := postBatch(hs, "bob", uuid.NewString(), tt.body)
			apitest.WantResponse(t, resp, tt.status, string(tt.code))
			if tt.want != nil {
				var got []errcode.IndexedFieldError
				errorDetails(t, resp, &got)
				if len(got) != len(tt.want) {
					t.Fatalf("details %+v, want %d problems", got, len(tt.want))
				}
				for i := range got {
					if got[i].Index != tt.want[i].Index || got[i].Field == "" || got[i].Message == "" {
						t.Fatalf("problem %d: %+v, want event %d named with its field", i, got[i], tt.want[i].Index)
					}
				}
			}
		})
	}
	if n := len(hs.B.StoredEvents(t)); n != 0 || hs.LedgerCount() != 0 {
		t.Fatalf("%d events and %d records stored by refused batches", n, hs.LedgerCount())
	}
}

// paddedEvents is n events of about size bytes each.
func paddedEvents(t testing.TB, n, size int) []sentEvent {
	out := make([]sentEvent, n)
	for i := range out {
		out[i] = padded(t, size, "x")
	}
	return out
}

// Events stored before, alone or in another batch, refuse the batch whole:
// the 409 names every one of them, nothing is stored or recorded, and the
// rest sent under a new key is stored.
func TestBatchWithStoredEventsNamesThemAll(t *testing.T) {
	hs := apitest.New(t)
	sent := someEvents(6)
	apitest.WantResponse(t, hs.Post("carol", uuid.NewString(), sent[1].body()), 201, "")
	apitest.WantResponse(t, postBatch(hs, "carol", uuid.NewString(), batchOf(sent[3:5])), 201, "")
	key := uuid.NewString()
	resp := postBatch(hs, "carol", key, batchOf(sent))
	apitest.WantResponse(t, resp, 409, string(api.EventAlreadyExists))
	var details struct{ IDs []string }
	errorDetails(t, resp, &details)
	if want := []string{sent[1].ID, sent[3].ID, sent[4].ID}; !slices.Equal(details.IDs, want) {
		t.Fatalf("409 names %v, want %v", details.IDs, want)
	}
	if n := len(hs.B.StoredEvents(t)); n != 3 || hs.LedgerCount() != 2 {
		t.Fatalf("%d events and %d records after the refused batch; want 3 and 2", n, hs.LedgerCount())
	}
	rest := []sentEvent{sent[0], sent[2], sent[5]}
	apitest.WantResponse(t, postBatch(hs, "carol", uuid.NewString(), batchOf(rest)), 201, "")
	if got := hs.Stored()["carol"]; !slices.Equal(got, slices.Sorted(slices.Values(ids(sent)))) {
		t.Fatalf("stored %v", got)
	}
	// The refused key was never recorded: it is free.
	apitest.WantResponse(t, postBatch(hs, "carol", key, batchOf(someEvents(2))), 201, "")
}

// The largest batch, at the body limit and the count limit, made of the
// characters that grow most on the way out, is stored and served back
// unchanged by every page of GET.
func TestLargestBatchThenEveryPage(t *testing.T) {
	hs := apitest.New(t)
	for _, tt := range []struct {
		name  string
		batch []sentEvent
	}{
		{"98 small events", someEvents(api.MaxBatchEvents)},
		{"2 MiB of quotes", quotedToLimit(t, api.MaxBatchBodyBytes)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			user := "big-" + uuid.NewString()
			body := batchOf(tt.batch)
			if len(body) > api.MaxBatchBodyBytes {
				t.Fatalf("a batch of %d bytes", len(body))
			}
			apitest.WantResponse(t, postBatch(hs, user, uuid.NewString(), body), 201, "")
			wantListed(t, walk(hs, user, api.MaxPageSize), tt.batch)
			wantListed(t, walk(hs, user, 7), tt.batch)
		})
	}
}

// quotedToLimit is events of escaped quotes whose batch is just under limit
// bytes, each under MAX_BODY_BYTES.
func quotedToLimit(t testing.TB, limit int) []sentEvent {
	var out []sentEvent
	const each = 200 << 10
	for len(batchOf(out)) < limit-2*each {
		out = append(out, padded(t, each, `\"`))
	}
	last := limit - len(batchOf(out)) - 600
	return append(out, padded(t, last, `\"`))
}

// Single and batch sends of the same events, in any order and interleaving,
// from several devices through several environments, with answers lost
// after commit: each event is stored once.
func TestSingleAndBatchSendsOfTheSameEventsStoreEachOnce(t *testing.T) {
	hs := apitest.New(t)
	envs := hs.Environments(4)
	lost := hs.B.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.LostAnswer, Times: 10})
	sent := someEvents(60)
	var wg sync.WaitGroup
	for d := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(d), 7))
			order := rng.Perm(len(sent))
			for len(order) > 0 {
				n := min(len(order), 1+rng.IntN(12))
				part := make([]sentEvent, n)
				for i, j := range order[:n] {
					part[i] = sent[j]
				}
				order = order[n:]
				sendUntilStored(t, envs[rng.IntN(len(envs))], part)
			}
		})
	}
	wg.Wait()
	if got := hs.Stored()["dora"]; !slices.Equal(got, slices.Sorted(slices.Values(ids(sent)))) {
		t.Fatalf("stored %d events, sent %d distinct: %v", len(got), len(sent), got)
	}
	listed, _ := hs.Drain("dora", "", 1000)
	if len(listed) != len(sent) {
		t.Fatalf("listed %d", len(listed))
	}
	// The claim is about lost answers: all of them must have been lost
	// (the sends make far more than 10 commits).
	if lost.Fired() != 10 {
		t.Fatalf("%d answers lost after commit, want 10", lost.Fired())
	}
}

// sendUntilStored sends part as a client does: one event alone, several as
// a batch under one key kept until answered; on a 409 naming stored events,
// the rest under a new key; on a 503, the same again.
func sendUntilStored(t *testing.T, env *apitest.Harness, part []sentEvent) {
	key := uuid.NewString()
	for attempt := 0; len(part) > 0; attempt++ {
		if attempt > 50 {
			t.Errorf("not stored after 50 attempts")
			return
		}
		var resp events.APIGatewayV2HTTPResponse
		if len(part) == 1 {
			resp = env.Post("dora", key, part[0].body())
		} else {
			resp = postBatch(env, "dora", key, batchOf(part))
		}
		switch {
		case resp.StatusCode == 201:
			return
		case resp.StatusCode == 503:
		case resp.StatusCode == 409 && strings.Contains(resp.Body, `"EVENT_ALREADY_EXISTS"`):
			if len(part) == 1 {
				return
			}
			var details struct{ IDs []string }
			errorDetails(t, resp, &details)
			part = slices.DeleteFunc(part, func(e sentEvent) bool { return slices.Contains(details.IDs, e.ID) })
			key = uuid.NewString()
		default:
			t.Errorf("%d %s", resp.StatusCode, resp.Body)
			return
		}
	}
}
