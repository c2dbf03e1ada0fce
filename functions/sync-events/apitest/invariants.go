package apitest

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/idempotency"

	"github.com/sync-events/sync-events/internal/tally"
)

// Exchange is one request a test sent and the answer it got.
type Exchange struct {
	User, Key, EventID string
	Hash               string // payload hash of the body sent
	Status             int
	Code               string // the error code of the answer, if any
	Body               string
	Replayed           bool
}

// Recorder keeps every Exchange, safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	All []Exchange
}

// Add records x.
func (r *Recorder) Add(x Exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.All = append(r.All, x)
}

// Send posts body for user under key, records the Exchange and returns it.
func (hs *Harness) Send(rec *Recorder, user, key, eventID, body string) Exchange {
	hs.T.Helper()
	resp := hs.Post(user, key, body)
	x := ExchangeOf(user, key, eventID, body, resp)
	rec.Add(x)
	return x
}

// ExchangeOf is the exchange of one request and its answer.
func ExchangeOf(user, key, eventID, body string, resp events.APIGatewayV2HTTPResponse) Exchange {
	hash, _ := idempotency.PayloadHash([]byte(body))
	var e struct{ Error string }
	json.Unmarshal([]byte(resp.Body), &e) //nolint:errcheck // a 201 body has no error field
	return Exchange{
		User: user, Key: key, EventID: eventID, Hash: hash, Status: resp.StatusCode, Code: e.Error,
		Body: resp.Body, Replayed: resp.Headers["Idempotent-Replayed"] == "true",
	}
}

// RetryingSend is the app's sync queue: it retries a 5xx with the same key
// and body, up to attempts times, and returns the last answer.
func (hs *Harness) RetryingSend(rec *Recorder, user, key, eventID, body string, attempts int) Exchange {
	hs.T.Helper()
	var x Exchange
	for range attempts {
		if x = hs.Send(rec, user, key, eventID, body); x.Status < 500 {
			return x
		}
		if x.Status == 503 {
			time.Sleep(time.Millisecond) // Retry-After, scaled down for tests
		}
	}
	return x
}

// CheckInvariants holds the tables to everything the exchanges were told:
//   - per user, the stored events are exactly the distinct event ids whose
//     requests got a 201 at least once, each stored once;
//   - per (user, key), every 201 is byte-identical and equal to the ledger's
//     stored answer, the winning body never gets anything else, and every
//     other body gets a 409;
//   - every ledger record's payload_hash is that of a body sent with its key,
//     and a ledger record exists exactly for the keys that got a 201;
//   - nothing was written for requests that only got 4xx or 5xx.
func (hs *Harness) CheckInvariants(rec *Recorder) {
	hs.T.Helper()
	t := hs.T
	type userKey struct{ user, key string }
	want201 := map[string]map[string]bool{} // user -> event ids answered 201
	first201 := map[userKey]string{}
	sentHashes := map[userKey]map[string]bool{}
	for _, x := range rec.All {
		uk := userKey{x.User, x.Key}
		if sentHashes[uk] == nil {
			sentHashes[uk] = map[string]bool{}
		}
		sentHashes[uk][x.Hash] = true
		if x.Status == 201 {
			if want201[x.User] == nil {
				want201[x.User] = map[string]bool{}
			}
			want201[x.User][x.EventID] = true
			if prev, ok := first201[uk]; ok && prev != x.Body {
				t.Errorf("key %s of %s: two different 201 bodies:\n%s\n%s", x.Key, x.User, prev, x.Body)
			}
			first201[uk] = x.Body
		}
	}
	// Per key, the body that won it is always answered its 201; every other
	// body is the seed's 409, or EVENT_ALREADY_EXISTS when its event id was
	// stored under another key (unrecorded, so that answer can precede the
	// key being won by another body).
	winningHash := map[userKey]string{}
	records := hs.B.LedgerRecords(hs.T)
	for _, r := range records {
		winningHash[userKey{r.UserID, r.Key}] = r.PayloadHash
	}
	for _, x := range rec.All {
		if x.Status >= 500 {
			continue
		}
		won, ok := winningHash[userKey{x.User, x.Key}]
		switch {
		case ok && x.Hash == won && x.Status != 201:
			t.Errorf("key %s of %s: its winning body was answered %d %s", x.Key, x.User, x.Status, x.Body)
		case x.Hash != won && x.Status == 201:
			t.Errorf("key %s of %s: a body that did not win it got a 201", x.Key, x.User)
		case x.Code == string(errcode.KeyReused) && x.Body != SeedKeyReusedBody:
			t.Errorf("key %s of %s: 409 body %s is not the seed's", x.Key, x.User, x.Body)
		case x.Hash != won && x.Code != string(errcode.KeyReused) && x.Code != string(api.EventAlreadyExists):
			t.Errorf("key %s of %s: a losing body got %d %s", x.Key, x.User, x.Status, x.Body)
		}
	}

	stored := map[string]map[string]int{}
	for _, ev := range hs.B.StoredEvents(hs.T) {
		u, id := ev.Stream, ev.ID
		if stored[u] == nil {
			stored[u] = map[string]int{}
		}
		stored[u][id]++
	}
	for u, ids := range stored {
		for id, n := range ids {
			if n != 1 {
				t.Errorf("event %s of %s stored %d times", id, u, n)
			}
			if !want201[u][id] {
				t.Errorf("event %s of %s is stored but no request for it got a 201", id, u)
			}
		}
	}
	for u, ids := range want201 {
		for id := range ids {
			if stored[u][id] != 1 {
				t.Errorf("event %s of %s got a 201 but is not stored", id, u)
			}
		}
	}

	for _, r := range records {
		uk := userKey{r.UserID, r.Key}
		if !sentHashes[uk][r.PayloadHash] {
			t.Errorf("ledger record %v holds a hash no request with that key sent", uk)
		}
		body, won := first201[uk]
		if !won {
			t.Errorf("ledger record %v, but that key never got a 201", uk)
			continue
		}
		if r.StatusCode != 201 || string(r.ResponseBody) != body {
			t.Errorf("ledger record %v stores %d %s, the clients were answered 201 %s", uk, r.StatusCode, r.ResponseBody, body)
		}
	}
	if len(records) != len(first201) {
		t.Errorf("%d ledger records for %d keys answered 201", len(records), len(first201))
	}
}

// Tally counts the exchanges by status and error code, for the test log.
func (r *Recorder) Tally() string {
	counts := tally.Counts{}
	for _, x := range r.All {
		counts[tally.Answer(x.Status, x.Code, x.Replayed)]++
	}
	s := fmt.Sprintf("%d requests:", len(r.All))
	for _, k := range counts.Labels() {
		s += fmt.Sprintf(" [%s: %d]", k, counts[k])
	}
	return s
}

// SeedKeyReusedBody is the seed's 409 for a known key with another body.
const SeedKeyReusedBody = `{"error":"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD","message":"Idempotency key already used with a different payload"}`
