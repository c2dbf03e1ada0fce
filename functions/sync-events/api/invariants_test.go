package api_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"

	"github.com/sync-events/sync-events/internal/tally"
)

// exchange is one request a test sent and the answer it got.
type exchange struct {
	user, key, eventID string
	hash               string // payload hash of the body sent
	status             int
	code               string // the error code of the answer, if any
	body               string
	replayed           bool
}

// recorder keeps every exchange, safe for concurrent use.
type recorder struct {
	mu  sync.Mutex
	all []exchange
}

func (r *recorder) add(x exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, x)
}

// send posts body for user under key, records the exchange and returns it.
func (hs *harness) send(rec *recorder, user, key, eventID, body string) exchange {
	hs.t.Helper()
	resp := hs.post(user, key, body)
	x := exchangeOf(user, key, eventID, body, resp)
	rec.add(x)
	return x
}

func exchangeOf(user, key, eventID, body string, resp events.APIGatewayV2HTTPResponse) exchange {
	hash, _ := idempotency.PayloadHash([]byte(body))
	var e struct{ Error string }
	json.Unmarshal([]byte(resp.Body), &e) //nolint:errcheck // a 201 body has no error field
	return exchange{
		user: user, key: key, eventID: eventID, hash: hash, status: resp.StatusCode, code: e.Error,
		body: resp.Body, replayed: resp.Headers["Idempotent-Replayed"] == "true",
	}
}

// retryingSend is the app's sync queue: it retries a 5xx with the same key
// and body, up to attempts times, and returns the last answer.
func (hs *harness) retryingSend(rec *recorder, user, key, eventID, body string, attempts int) exchange {
	hs.t.Helper()
	var x exchange
	for range attempts {
		if x = hs.send(rec, user, key, eventID, body); x.status < 500 {
			return x
		}
		if x.status == 503 {
			time.Sleep(time.Millisecond) // Retry-After, scaled down for tests
		}
	}
	return x
}

// checkInvariants holds the tables to everything the exchanges were told:
//   - per user, the stored events are exactly the distinct event ids whose
//     requests got a 201 at least once, each stored once;
//   - per (user, key), every 201 is byte-identical and equal to the ledger's
//     stored answer, the winning body never gets anything else, and every
//     other body gets a 409;
//   - every ledger record's payload_hash is that of a body sent with its key,
//     and a ledger record exists exactly for the keys that got a 201;
//   - nothing was written for requests that only got 4xx or 5xx.
func (hs *harness) checkInvariants(rec *recorder) {
	hs.t.Helper()
	t := hs.t
	type userKey struct{ user, key string }
	want201 := map[string]map[string]bool{} // user -> event ids answered 201
	first201 := map[userKey]string{}
	sentHashes := map[userKey]map[string]bool{}
	for _, x := range rec.all {
		uk := userKey{x.user, x.key}
		if sentHashes[uk] == nil {
			sentHashes[uk] = map[string]bool{}
		}
		sentHashes[uk][x.hash] = true
		if x.status == 201 {
			if want201[x.user] == nil {
				want201[x.user] = map[string]bool{}
			}
			want201[x.user][x.eventID] = true
			if prev, ok := first201[uk]; ok && prev != x.body {
				t.Errorf("key %s of %s: two different 201 bodies:\n%s\n%s", x.key, x.user, prev, x.body)
			}
			first201[uk] = x.body
		}
	}
	// Per key, the body that won it is always answered its 201; every other
	// body is the seed's 409, or EVENT_ALREADY_EXISTS when its event id was
	// stored under another key (unrecorded, so that answer can precede the
	// key being won by another body).
	winningHash := map[userKey]string{}
	records := hs.b.LedgerRecords(hs.t)
	for _, r := range records {
		winningHash[userKey{r.UserID, r.Key}] = r.PayloadHash
	}
	for _, x := range rec.all {
		if x.status >= 500 {
			continue
		}
		won, ok := winningHash[userKey{x.user, x.key}]
		switch {
		case ok && x.hash == won && x.status != 201:
			t.Errorf("key %s of %s: its winning body was answered %d %s", x.key, x.user, x.status, x.body)
		case x.hash != won && x.status == 201:
			t.Errorf("key %s of %s: a body that did not win it got a 201", x.key, x.user)
		case x.code == string(errcode.KeyReused) && x.body != seedKeyReusedBody:
			t.Errorf("key %s of %s: 409 body %s is not the seed's", x.key, x.user, x.body)
		case x.hash != won && x.code != string(errcode.KeyReused) && x.code != string(errcode.EventAlreadyExists):
			t.Errorf("key %s of %s: a losing body got %d %s", x.key, x.user, x.status, x.body)
		}
	}

	stored := map[string]map[string]int{}
	for _, ev := range hs.b.StoredEvents(hs.t) {
		u, id := ev.UserID, ev.ID
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

// tally counts the exchanges by status and error code, for the test log.
func (r *recorder) tally() string {
	counts := tally.Counts{}
	for _, x := range r.all {
		counts[tally.Answer(x.status, x.code, x.replayed)]++
	}
	s := fmt.Sprintf("%d requests:", len(r.all))
	for _, k := range counts.Labels() {
		s += fmt.Sprintf(" [%s: %d]", k, counts[k])
	}
	return s
}
