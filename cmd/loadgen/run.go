package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/tally"
)

// sent is a request whose first answer was a 201: the one replays and
// conflicts repeat.
type sent struct {
	user, key, eventID, body, answer string
}

// results collects what the run saw.
type results struct {
	mu        sync.Mutex
	latencies []time.Duration
	outcomes  tally.Counts
	stored    map[string]map[string]int // user -> event id -> 201s for it, fresh or replayed
	done      map[string][]sent         // user -> requests answered 201
	abandoned map[string]bool           // event ids whose request the deadline cut off
	problems  int
	notes     []string
	elapsed   time.Duration
	events    int // events listed by the final check
	start     time.Time
	marks     []mark // one per answered request, in the order they finished
	freshSeen int    // fresh events answered 201 so far
}

// mark is one answered request: when it finished, how long it took, and how
// many events the run had stored by then.
type mark struct {
	at, took time.Duration
	stored   int
}

func (r *results) problem(format string, args ...any) {
	r.problems++
	if len(r.notes) < 20 {
		r.notes = append(r.notes, fmt.Sprintf(format, args...))
	}
}

func run(o options) (*results, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = o.clients
	c := &client{o: o, http: &http.Client{Transport: transport, Timeout: 30 * time.Second}}
	r := &results{outcomes: tally.Counts{}, stored: map[string]map[string]int{}, done: map[string][]sent{}, abandoned: map[string]bool{}, start: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()

	jobs := make(chan int)
	var wg sync.WaitGroup
	start := r.start
	for w := range o.clients {
		rng := rand.New(rand.NewPCG(uint64(w), 42))
		wg.Go(func() {
			for range jobs {
				if ctx.Err() != nil {
					return
				}
				r.one(ctx, c, o, rng)
			}
		})
	}
feed:
	for i := range o.requests {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	r.elapsed = time.Since(start)
	r.start = start
	return r, r.verify(c, o)
}

func eventBody(id string) string {
	return `{"id":"` + id + `","type":"note.created","occurredAt":"2026-12-02T14:03:00Z","payload":{"title":"Groceries","items":["milk","eggs"]}}`
}

// one sends a request of a kind drawn from the mix and checks its answer.
func (r *results) one(ctx context.Context, c *client, o options, rng *rand.Rand) {
	user := fmt.Sprintf("load-user-%03d", rng.IntN(o.users))
	kind := rng.IntN(o.fresh + o.replay + o.bad)
	r.mu.Lock()
	prev := r.done[user]
	var base sent
	if len(prev) > 0 {
		base = prev[rng.IntN(len(prev))]
	}
	r.mu.Unlock()
	if base.key == "" {
		kind = 0 // nothing to repeat yet
	}
	var s sent
	var want string
	switch {
	case kind < o.fresh:
		id := uuid.NewString()
		s, want = sent{user: user, key: uuid.NewString(), eventID: id, body: eventBody(id)}, "fresh"
	case kind < o.fresh+o.replay:
		s, want = base, "replay"
	default:
		id := uuid.NewString()
		s, want = sent{user: user, key: base.key, eventID: id, body: eventBody(id)}, "conflict"
	}
	t0 := time.Now()
	a, err := c.do(ctx, http.MethodPost, s.user, s.key, "", s.body)
	took := time.Since(t0)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			r.outcomes[want+" -> transport error"]++
			r.problem("%s: %v", want, err)
		} else {
			r.abandoned[s.eventID] = true // the server may have stored it: a client would retry
		}
		return
	}
	r.latencies = append(r.latencies, took)
	if want == "fresh" && a.status == 201 && !a.replayed {
		r.freshSeen++
	}
	r.marks = append(r.marks, mark{at: time.Since(r.start), took: took, stored: r.freshSeen})
	r.outcomes[want+" -> "+tally.Answer(a.status, a.code, a.replayed)]++
	switch {
	case want == "fresh" && a.status == 201 && !a.replayed:
		s.answer = a.body
		r.done[user] = append(r.done[user], s)
	case want == "replay" && a.status == 201 && a.replayed && a.body == s.answer:
	case want == "conflict" && a.status == 409 && a.code == "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD":
	default:
		r.problem("%s for %s: got %d %s", want, s.key[:8], a.status, a.body)
		return
	}
	if a.status == 201 {
		if r.stored[user] == nil {
			r.stored[user] = map[string]int{}
		}
		r.stored[user][s.eventID]++
	}
}

// verify pages through every user's events: each event answered 201 is
// listed exactly once, and nothing else is.
func (r *results) verify(c *client, o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for u := range o.users {
		user := fmt.Sprintf("load-user-%03d", u)
		listed := map[string]int{}
		cursor := ""
		for {
			q := "limit=100"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			a, err := c.do(ctx, http.MethodGet, user, "", q, "")
			if err != nil || a.status != 200 {
				return fmt.Errorf("list %s: %d %v", user, a.status, err)
			}
			var page struct {
				Events     []struct{ ID string }
				NextCursor *string
			}
			if err := json.Unmarshal([]byte(a.body), &page); err != nil {
				return fmt.Errorf("list %s: %w", user, err)
			}
			for _, ev := range page.Events {
				listed[ev.ID]++
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		for id, n := range listed {
			r.events++
			if n != 1 {
				r.problem("event %s of %s listed %d times", id, user, n)
			}
			if r.stored[user][id] == 0 && !r.abandoned[id] {
				r.problem("event %s of %s is stored but no request for it got a 201", id, user)
			}
		}
		for id := range r.stored[user] {
			if listed[id] == 0 {
				r.problem("event %s of %s got a 201 but is lost", id, user)
			}
		}
	}
	return nil
}

func (r *results) report(o options) string {
	var b strings.Builder
	n := len(r.latencies)
	slices.Sort(r.latencies)
	pct := func(p float64) time.Duration {
		if n == 0 {
			return 0
		}
		return r.latencies[min(n-1, int(float64(n)*p))].Round(time.Microsecond)
	}
	fmt.Fprintf(&b, "clients %d, users %d, requests %d in %v: %.0f req/s\n", o.clients, o.users, n, r.elapsed.Round(time.Millisecond), float64(n)/r.elapsed.Seconds())
	fmt.Fprintf(&b, "latency p50 %v, p95 %v, p99 %v, max %v\n", pct(0.50), pct(0.95), pct(0.99), pct(1))
	for _, k := range r.outcomes.Labels() {
		fmt.Fprintf(&b, "  %-70s %d\n", k, r.outcomes[k])
	}
	if o.window > 0 {
		b.WriteString(r.windows(o.window))
	}
	fmt.Fprintf(&b, "invariants: %d events listed, %d problems (lost, duplicated or unexpected)\n", r.events, r.problems)
	for _, note := range r.notes {
		fmt.Fprintf(&b, "  %s\n", note)
	}
	return b.String()
}

// windows is throughput and median latency over each window of requests
// answered in a row, with the events stored when the window began: flat
// figures mean the backend does not slow down as the tables grow.
func (r *results) windows(size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %14s %10s %8s %10s\n", "stored events", "requests", "req/s", "p50")
	var prev time.Duration
	for lo := 0; lo+size <= len(r.marks); lo += size {
		w := r.marks[lo : lo+size]
		took := make([]time.Duration, len(w))
		for i, m := range w {
			took[i] = m.took
		}
		slices.Sort(took)
		end := w[len(w)-1].at
		stored := 0
		if lo > 0 {
			stored = r.marks[lo-1].stored
		}
		fmt.Fprintf(&b, "  %14d %10d %8.0f %10v\n", stored, size, float64(size)/(end-prev).Seconds(), took[len(took)/2].Round(time.Microsecond))
		prev = end
	}
	return b.String()
}
