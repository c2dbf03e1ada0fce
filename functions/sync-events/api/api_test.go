package api_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
)

func TestMissingKeyIsTheSeedsExact400(t *testing.T) {
	hs := apitest.New(t)
	const want = `{"error":"VALIDATION_FAILED","message":"Idempotency-Key header is required"}`
	if resp := hs.Do(apitest.Request("POST", "alice", "", apitest.EventBody(t, uuid.NewString()))); resp.StatusCode != 400 || resp.Body != want {
		t.Fatalf("got %d %s\nwant 400 %s", resp.StatusCode, resp.Body, want)
	}
	// The methods the route does not take are 405, with a key or without.
	for _, method := range []string{"PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} {
		for _, key := range []string{"", uuid.NewString()} {
			resp := hs.Do(apitest.Request(method, "alice", key, ""))
			apitest.WantResponse(t, resp, 405, string(errcode.MethodNotAllowed))
			if resp.Headers["Allow"] != "GET, POST" {
				t.Fatalf("%s: Allow %q", method, resp.Headers["Allow"])
			}
		}
	}
	if hs.LedgerCount() != 0 || len(hs.Stored()) != 0 {
		t.Fatal("a refused request wrote something")
	}
}

func TestHeaderNamesAreCaseInsensitive(t *testing.T) {
	hs := apitest.New(t)
	req := apitest.Request("POST", "alice", "", apitest.EventBody(t, uuid.NewString()))
	req.Headers["IDEMPOTENCY-KEY"] = uuid.NewString()
	delete(req.Headers, "content-type")
	req.Headers["Content-Type"] = "application/json; charset=UTF-8"
	apitest.WantResponse(t, hs.Do(req), 201, "")
}

func TestFreshPostThenReplay(t *testing.T) {
	hs := apitest.New(t)
	key, id := uuid.NewString(), uuid.NewString()
	body := apitest.EventBody(t, id)
	first := hs.Post("alice", key, body)
	apitest.WantResponse(t, first, 201, "")
	var created map[string]string
	if err := json.Unmarshal([]byte(first.Body), &created); err != nil {
		t.Fatal(err)
	}
	if created["id"] != id || created["type"] != "note.created" {
		t.Fatalf("201 body %s", first.Body)
	}
	if _, err := time.Parse(time.RFC3339, created["receivedAt"]); err != nil {
		t.Fatalf("receivedAt %q: %v", created["receivedAt"], err)
	}
	if first.Headers["Idempotent-Replayed"] != "" {
		t.Fatal("a fresh answer is marked replayed")
	}

	reordered := fmt.Sprintf(`{"payload":{"priority":2.0,"done":false,"items":["milk","eggs"],"title":"Gro\u0063eries"},`+
		"\n\t"+`"occurredAt":"2026-12-02T14:03:00.250+01:00","type":"note.created","id":"%s"}`, id)
	for name, b := range map[string]string{"identical": body, "reordered and re-spaced": reordered} {
		t.Run(name, func(t *testing.T) {
			again := hs.Post("alice", key, b)
			if again.StatusCode != first.StatusCode || again.Body != first.Body {
				t.Fatalf("replay %d %s\nwant %d %s", again.StatusCode, again.Body, first.StatusCode, first.Body)
			}
			if again.Headers["Idempotent-Replayed"] != "true" {
				t.Fatalf("replay headers %v", again.Headers)
			}
		})
	}
	if got := hs.Stored()["alice"]; len(got) != 1 || got[0] != id {
		t.Fatalf("stored %v, want the one event %s", got, id)
	}
}

func TestSameKeyOtherBodyIsTheSeedsExact409(t *testing.T) {
	hs := apitest.New(t)
	key := uuid.NewString()
	apitest.WantResponse(t, hs.Post("alice", key, apitest.EventBody(t, uuid.NewString())), 201, "")
	resp := hs.Post("alice", key, apitest.EventBody(t, uuid.NewString()))
	if resp.StatusCode != 409 || resp.Body != apitest.SeedKeyReusedBody {
		t.Fatalf("got %d %s\nwant 409 %s", resp.StatusCode, resp.Body, apitest.SeedKeyReusedBody)
	}
	if n := len(hs.Stored()["alice"]); n != 1 {
		t.Fatalf("%d events stored, want 1", n)
	}
}

func TestSameKeyFromTwoUsersStoresTwoEvents(t *testing.T) {
	hs := apitest.New(t)
	key := uuid.NewString()
	a := hs.Post("alice", key, apitest.EventBody(t, uuid.NewString()))
	b := hs.Post("bob", key, apitest.EventBody(t, uuid.NewString()))
	apitest.WantResponse(t, a, 201, "")
	apitest.WantResponse(t, b, 201, "")
	if a.Body == b.Body || b.Headers["Idempotent-Replayed"] != "" {
		t.Fatal("bob got alice's answer")
	}
	got := hs.Stored()
	if len(got["alice"]) != 1 || len(got["bob"]) != 1 {
		t.Fatalf("stored %v", got)
	}
}

func TestSameEventIDUnderAnotherKeyIs409AndRecordsNothing(t *testing.T) {
	hs := apitest.New(t)
	id := uuid.NewString()
	apitest.WantResponse(t, hs.Post("alice", uuid.NewString(), apitest.EventBody(t, id)), 201, "")
	second := uuid.NewString()
	apitest.WantResponse(t, hs.Post("alice", second, apitest.EventBody(t, id)), 409, string(api.EventAlreadyExists))
	if n, events := hs.LedgerCount(), hs.Stored()["alice"]; n != 1 || len(events) != 1 || events[0] != id {
		t.Fatalf("%d ledger records and events %v, want only the first request's", n, events)
	}
	// Unrecorded, so the same key can still be used for a new event.
	apitest.WantResponse(t, hs.Post("alice", second, apitest.EventBody(t, uuid.NewString())), 201, "")
	// Another user may use the same event id.
	apitest.WantResponse(t, hs.Post("bob", uuid.NewString(), apitest.EventBody(t, id)), 201, "")
}

func TestConcurrentIdenticalRequestsStoreOneEvent(t *testing.T) {
	hs := apitest.New(t)
	const n = 50
	key, body := uuid.NewString(), apitest.EventBody(t, uuid.NewString())
	resps := make([]string, n)
	replayed := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := hs.Post("alice", key, body)
			resps[i] = fmt.Sprintf("%d %s", r.StatusCode, r.Body)
			replayed[i] = r.Headers["Idempotent-Replayed"] == "true"
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if resps[i] != resps[0] {
			t.Fatalf("answer %d is %s, answer 0 is %s", i, resps[i], resps[0])
		}
		if !replayed[i] {
			fresh++
		}
	}
	if !strings.HasPrefix(resps[0], "201 ") || fresh != 1 {
		t.Fatalf("answers %s, %d unreplayed; want 201 and exactly 1", resps[0], fresh)
	}
	if got := hs.Stored()["alice"]; len(got) != 1 {
		t.Fatalf("stored %v, want 1 event", got)
	}
}

type listedPage struct {
	Events []struct {
		ID, ReceivedAt string
		Payload        map[string]any
	}
	NextCursor *string
}

func page(hs *apitest.Harness, user string, query map[string]string) listedPage {
	hs.T.Helper()
	resp := hs.Get(user, query)
	apitest.WantResponse(hs.T, resp, 200, "")
	var p listedPage
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		hs.T.Fatal(err)
	}
	return p
}

func TestListReturnsOnlyTheCallersEventsInOrderAndPagesStably(t *testing.T) {
	hs := apitest.New(t)
	// The order is commit order: for requests answered one after another,
	// the order they were sent in.
	var want []string
	for i := range 7 {
		id := uuid.NewString()
		apitest.WantResponse(t, hs.Post("alice", uuid.NewString(), apitest.EventBody(t, id)), 201, "")
		want = append(want, id)
		if i%2 == 0 {
			apitest.WantResponse(t, hs.Post("bob", uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
		}
	}
	// Pages of 3, and once more from the same cursors: the same pages.
	for round := range 2 {
		var got []string
		var prev string
		query := map[string]string{"limit": "3"}
		for pages := 0; ; pages++ {
			p := page(hs, "alice", query)
			for _, ev := range p.Events {
				if ev.ReceivedAt < prev {
					t.Fatalf("events out of receive order: %s after %s", ev.ReceivedAt, prev)
				}
				prev = ev.ReceivedAt
				got = append(got, ev.ID)
				if ev.Payload["title"] != "Groceries" {
					t.Fatalf("payload %v", ev.Payload)
				}
			}
			if p.NextCursor == nil {
				if pages != 2 {
					t.Fatalf("round %d: %d pages, want 3", round, pages+1)
				}
				break
			}
			query = map[string]string{"limit": "3", "cursor": *p.NextCursor}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("round %d: listed\n%v\nwant\n%v", round, got, want)
		}
	}
	if p := page(hs, "carol", nil); len(p.Events) != 0 || p.NextCursor != nil {
		t.Fatalf("carol sees %+v", p)
	}
}

func TestListRejectsBadParameters(t *testing.T) {
	hs := apitest.New(t)
	for _, q := range []map[string]string{
		{"limit": "0"}, {"limit": "1001"}, {"limit": "ten"}, {"cursor": "!!"}, {"cursor": ""},
		{"cursor": "bm90LWEtY3Vyc29y"}, // base64url of "not-a-cursor"
	} {
		apitest.WantResponse(t, hs.Get("alice", q), 400, string(errcode.ValidationFailed))
	}
	apitest.WantResponse(t, hs.Get("", nil), 401, string(errcode.Unauthorized))
}

// TestCursorCannotCrossUsers: a cursor names a position, not a user; bob
// using alice's cursor pages through his own events only.
func TestCursorCannotCrossUsers(t *testing.T) {
	hs := apitest.New(t)
	var alices, bobs []string
	for range 3 {
		a, b := uuid.NewString(), uuid.NewString()
		apitest.WantResponse(t, hs.Post("alice", uuid.NewString(), apitest.EventBody(t, a)), 201, "")
		apitest.WantResponse(t, hs.Post("bob", uuid.NewString(), apitest.EventBody(t, b)), 201, "")
		alices, bobs = append(alices, a), append(bobs, b)
	}
	first := page(hs, "alice", map[string]string{"limit": "1"})
	if first.NextCursor == nil || len(first.Events) != 1 || first.Events[0].ID != alices[0] {
		t.Fatalf("alice's first page: %+v", first)
	}
	// A cursor is a position in the caller's own events, so bob reads his
	// own from the same place alice would: his second and third, and none
	// of hers (an empty page would hide a cursor that carried alice).
	p := page(hs, "bob", map[string]string{"limit": "100", "cursor": *first.NextCursor})
	var got []string
	for _, ev := range p.Events {
		got = append(got, ev.ID)
	}
	if !slices.Equal(got, bobs[1:]) {
		t.Fatalf("bob's page from alice's cursor holds %v, want his own after the first %v (alice's are %v)", got, bobs[1:], alices)
	}
	// And alice's cursor still reads hers.
	rest := page(hs, "alice", map[string]string{"limit": "100", "cursor": *first.NextCursor})
	got = nil
	for _, ev := range rest.Events {
		got = append(got, ev.ID)
	}
	if !slices.Equal(got, alices[1:]) {
		t.Fatalf("alice's page from her cursor holds %v, want %v", got, alices[1:])
	}
}

// TestPagesCutShortByDynamoDBAreFilled: DynamoDB stops a Query at 1 MB of
// items, with fewer items than asked for and a LastEvaluatedKey. The page
// is filled from there, and the last page is still known to be last.
func TestPagesCutShortByDynamoDBAreFilled(t *testing.T) {
	hs := apitest.New(t)
	for range 5 {
		apitest.WantResponse(t, hs.Post("alice", uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
	}
	fault := hs.B.Transport.Inject(ddbtest.Fault{
		Op: "Query", Kind: ddbtest.ShortPage, Times: 1000, KeyNames: []string{"user_id", "event_id", "received_key"},
	})
	first := page(hs, "alice", map[string]string{"limit": "3"})
	if len(first.Events) != 3 || first.NextCursor == nil {
		t.Fatalf("first page: %d events, cursor %v", len(first.Events), first.NextCursor)
	}
	rest := page(hs, "alice", map[string]string{"limit": "3", "cursor": *first.NextCursor})
	if len(rest.Events) != 2 || rest.NextCursor != nil {
		t.Fatalf("second page: %d events, cursor %v", len(rest.Events), rest.NextCursor)
	}
	if fault.Fired() < 6 {
		t.Fatalf("only %d Query calls were cut short", fault.Fired())
	}
}

// TestQuotedAndBareKeysAreOneKey: the draft's Structured Field String form
// ("<uuid>") and the bare UUID name the same ledger record, in both orders,
// whether the replay comes from memory or from DynamoDB.
func TestQuotedAndBareKeysAreOneKey(t *testing.T) {
	hs := apitest.New(t)
	for _, first := range []string{"bare", "quoted"} {
		t.Run(first+" first", func(t *testing.T) {
			key := uuid.NewString()
			bare, quoted := key, `"`+strings.ToUpper(key)+`"`
			send, retry := bare, quoted
			if first == "quoted" {
				send, retry = quoted, bare
			}
			body := apitest.EventBody(t, uuid.NewString())
			created := hs.Post("alice", send, body)
			if created.StatusCode != 201 {
				t.Fatalf("first: %d %s", created.StatusCode, created.Body)
			}
			for _, env := range []*apitest.Harness{hs, hs.NewEnvironment()} {
				again := env.Post("alice", retry, body)
				if again.StatusCode != 201 || again.Headers["Idempotent-Replayed"] != "true" || again.Body != created.Body {
					t.Fatalf("retry with %s: %d %v %s", retry, again.StatusCode, again.Headers, again.Body)
				}
				if other := env.Post("alice", retry, apitest.EventBody(t, uuid.NewString())); other.StatusCode != 409 || other.Body != apitest.SeedKeyReusedBody {
					t.Fatalf("other body with %s: %d %s", retry, other.StatusCode, other.Body)
				}
			}
		})
	}
	if n := len(hs.B.LedgerRecords(t)); n != 2 {
		t.Fatalf("%d ledger records, want 2 (one per key)", n)
	}
}
