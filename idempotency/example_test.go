package idempotency_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/sync-events/sync-events/idempotency"
)

// set is the write type of memoryStore: one key of a map set to a value.
type set struct{ key, value string }

// memoryStore is a Store kept in memory, to show the two methods a store
// has; it commits a record and its writes under one lock, all or nothing.
// A real one is a database's transaction (package dynamodbstore).
type memoryStore struct {
	mu      sync.Mutex
	records map[[2]string]idempotency.Record
	data    map[string]string
}

func (s *memoryStore) Commit(_ context.Context, rec idempotency.Record, writes []set, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := [2]string{rec.UserID, rec.Key}
	if old, ok := s.records[id]; ok && old.ExpiresAt.After(now) {
		return &idempotency.KeyExistsError{Existing: &old}
	}
	s.records[id] = rec
	for _, w := range writes {
		s.data[w.key] = w.value
	}
	return nil
}

func (s *memoryStore) Get(_ context.Context, userID, key string) (idempotency.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[[2]string{userID, key}]
	return rec, ok, nil
}

// The flow over a store of one's own: a request runs once under its key;
// its retry gets the first answer without running again; the key with
// another body is refused.
func ExampleFlow_Do() {
	store := &memoryStore{records: map[[2]string]idempotency.Record{}, data: map[string]string{}}
	flow := idempotency.NewFlow[set](store, idempotency.Options{})
	ctx := context.Background()

	rename := func(key, title string) {
		body, err := idempotency.Canonicalize(fmt.Appendf(nil, `{"title":%q}`, title))
		if err != nil {
			log.Fatal(err) // not I-JSON: a 400
		}
		req := idempotency.Request{UserID: "alice", Key: key, Method: "PUT", Route: "/title", CanonicalBody: body}
		res, err := flow.Do(ctx, req, func(context.Context, time.Time) (idempotency.Execution[set], error) {
			return idempotency.Execution[set]{
				Response: idempotency.Response{StatusCode: 200, Body: body},
				Writes:   []set{{"title", title}},
			}, nil
		})
		if err != nil {
			log.Fatal(err) // the store failed: retry with the same key
		}
		fmt.Println(res.Outcome, res.StatusCode, string(res.Body), "title:", store.data["title"])
	}
	rename("8e03978e-40d5-43e8-bc93-6894a57f9324", "Errands")
	rename("8e03978e-40d5-43e8-bc93-6894a57f9324", "Errands") // a retry
	rename("8e03978e-40d5-43e8-bc93-6894a57f9324", "Chores")  // the key reused
	// Output:
	// executed 200 {"title":"Errands"} title: Errands
	// replayed 200 {"title":"Errands"} title: Errands
	// key_reused 0  title: Errands
}

// Two spellings of one JSON value have one canonical form, and so one
// payload hash: a retry that reorders members is the same request.
func ExampleCanonicalize() {
	a, _ := idempotency.Canonicalize([]byte(`{"b": 2, "a": 1.0}`))
	b, _ := idempotency.Canonicalize([]byte(`{"a":1,"b":2}`))
	fmt.Println(string(a), string(a) == string(b))
	_, err := idempotency.Canonicalize([]byte(`{"a":1,"a":2}`))
	fmt.Println(err != nil)
	// Output:
	// {"a":1,"b":2} true
	// true
}

// The header's value, bare or quoted (the IETF draft's form), in any case,
// is one key; anything else is the 400 a client is told.
func ExampleParseKey() {
	for _, v := range []string{
		`8E03978E-40D5-43E8-BC93-6894A57F9324`,
		`"8e03978e-40d5-43e8-bc93-6894a57f9324"`,
		`{8e03978e-40d5-43e8-bc93-6894a57f9324}`,
	} {
		key, err := idempotency.ParseKey([]string{v})
		fmt.Printf("%q %v\n", key, err != nil)
	}
	// Output:
	// "8e03978e-40d5-43e8-bc93-6894a57f9324" false
	// "8e03978e-40d5-43e8-bc93-6894a57f9324" false
	// "" true
}

// A retry loop around a call that may be throttled: each wait is random, up
// to a ceiling that doubles.
func ExampleBackoff() {
	backoff := idempotency.Backoff{Base: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	for retry := 1; retry <= 6; retry++ {
		d := backoff.Delay(retry)
		fmt.Println(retry, d >= time.Millisecond && d <= min(10*time.Millisecond<<retry, 200*time.Millisecond))
	}
	// Output:
	// 1 true
	// 2 true
	// 3 true
	// 4 true
	// 5 true
	// 6 true
}
