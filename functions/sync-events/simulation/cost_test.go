package simulation_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/local/embedded"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// TestCallsPerFreshMutation counts the DynamoDB calls of fresh mutations
// of one user, sent one after another over 1, 2 and 8 execution
// environments. Sent to one environment (a device's requests usually
// reach a warm one), each costs one call: the environment knows the
// user's head. Sent round-robin, so that every request reaches an
// environment another one has moved the head behind, each costs two: the
// failed head condition returns the real head, and the commit is made
// again. kumo returns no item with a failed condition, so there the head
// is read first: three.
func TestCallsPerFreshMutation(t *testing.T) {
	const mutations = 24
	for _, envs := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("environments=%d", envs), func(t *testing.T) {
			hs := apitest.New(t)
			all := hs.Environments(envs)
			user := "u-" + uuid.NewString()
			// Each environment has seen the user once before: no cold start
			// in the figures.
			for _, env := range all {
				apitest.WantResponse(t, env.Post(user, uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
			}
			// Operations, as the request's metrics line counts them: an SDK
			// retry of a failed attempt is a retry, not another call.
			worst, total := 0, 0
			for i := range mutations {
				env := all[i%envs]
				apitest.WantResponse(t, env.Post(user, uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
				m, _ := env.LastMetrics(t)
				worst, total = max(worst, m.DynamoDBCalls), total+m.DynamoDBCalls
			}
			want := 1
			if envs > 1 {
				want = 2
				if hs.B.Name == embedded.Name {
					want = 3
				}
			}
			t.Logf("%s, %d environments: %.2f calls per fresh mutation on average, %d at worst", hs.B.Name, envs, float64(total)/mutations, worst)
			if worst != want || total != want*mutations {
				t.Fatalf("%d calls at worst, %d in all; want %d each", worst, total, want)
			}
		})
	}
}

// TestDevicesOfOneUserWritingAtOnce: N devices of one user write at once
// through as many environments; the head serialises them. Every event is
// stored once, each in its own place, and the calls and conflict retries
// per event are reported (make bench measures the throughput).
func TestDevicesOfOneUserWritingAtOnce(t *testing.T) {
	for _, devices := range []int{2, 8} {
		t.Run(fmt.Sprintf("devices=%d", devices), func(t *testing.T) {
			hs := apitest.New(t)
			envs := hs.Environments(devices)
			const perDevice = 12
			user := "u-" + uuid.NewString()
			var wg sync.WaitGroup
			var mu sync.Mutex
			var sent []string
			for _, env := range envs {
				wg.Go(func() {
					for range perDevice {
						id, key := uuid.NewString(), uuid.NewString()
						body := apitest.EventBody(t, id)
						for attempt := 0; ; attempt++ {
							resp := env.Post(user, key, body)
							if resp.StatusCode == 201 {
								break
							}
							if resp.StatusCode != 503 || attempt > 20 {
								t.Errorf("%d %s", resp.StatusCode, resp.Body)
								return
							}
						}
						mu.Lock()
						sent = append(sent, id)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			// Stored once, each in its own place: the stored events are
			// exactly the ids sent, each once, at positions 1 to N with
			// none twice, and the listing is exactly that order. Counting
			// alone would let a duplicate and a loss cancel out.
			byPosition := map[uint64]string{}
			var stored []string
			for _, ev := range hs.B.StoredEvents(t) {
				if ev.Stream != user {
					continue
				}
				stored = append(stored, ev.ID)
				if prev, taken := byPosition[ev.Position.Seq]; taken || ev.Position.IsLegacy() {
					t.Fatalf("position %+v holds %s and %s", ev.Position, prev, ev.ID)
				}
				byPosition[ev.Position.Seq] = ev.ID
			}
			if slices.Sort(stored); !slices.Equal(stored, slices.Sorted(slices.Values(sent))) {
				t.Fatalf("stored %d events, sent %d: the ids differ (%s)", len(stored), len(sent), firstDifference(stored, slices.Sorted(slices.Values(sent))))
			}
			inOrder := make([]string, len(stored))
			for seq, id := range byPosition {
				if seq < 1 || seq > uint64(len(stored)) {
					t.Fatalf("%s at position %d of %d", id, seq, len(stored))
				}
				inOrder[seq-1] = id
			}
			listed, _ := hs.Drain(user, "", 1000)
			if !slices.Equal(listed, inOrder) {
				t.Fatalf("the listing is not the stored order: %s", firstDifference(listed, inOrder))
			}
			calls := hs.B.Transport.Calls()
			t.Logf("%s, %d devices at once: %.2f TransactWriteItems and %.2f GetItem per event",
				hs.B.Name, devices, float64(calls["TransactWriteItems"])/float64(len(listed)), float64(calls["GetItem"])/float64(len(listed)))
		})
	}
}

// BenchmarkOneUserDevicesAtOnce is one user's write throughput with N
// devices writing at once, each through its own environment, every
// DynamoDB call held up to 8 ms (4 on average) as a round trip to DynamoDB
// takes: the head admits one commit at a time, so the user's throughput is
// about one commit per round trip, whatever N, and the rest are retries.
// It reports events per second and DynamoDB calls per event.
func BenchmarkOneUserDevicesAtOnce(b *testing.B) {
	for _, devices := range []int{1, 2, 4, 8, 16, 32} {
		b.Run(fmt.Sprintf("devices=%d", devices), func(b *testing.B) {
			hs := apitest.New(b)
			envs := hs.Environments(devices)
			hs.B.Transport.Inject(ddbtest.Fault{Kind: ddbtest.Delayed, Delay: 8 * time.Millisecond, Times: 1 << 30})
			user := "u-" + uuid.NewString()
			writersAtOnce(b, hs, envs, api.EventsPath, user, func(_ int, env *apitest.Harness) (events.APIGatewayV2HTTPResponse, string) {
				id := uuid.NewString()
				key, body := uuid.NewString(), apitest.EventBody(b, id)
				// A 503 (the head moved, conflicts ran out) is retried
				// with the same key; anything else, or a 503 that never
				// ends, fails the benchmark instead of looping for ever.
				for attempt := 0; ; attempt++ {
					resp := env.Post(user, key, body)
					if resp.StatusCode != 503 || attempt >= 100 {
						return resp, id
					}
				}
			}, nil)
		})
	}
}

// sustain, when set (go test -bench … -args -sustain 30s), keeps the
// writers of the writer benchmarks writing for at least that long,
// whatever b.N: a busy space's windows (an environment's accept window,
// the head's yield, a member's accept limit) are a second each, so a
// burst shorter than them never sees one lapse. make bench-space sets it.
var sustain = flag.Duration("sustain", 0, "write for at least this long in the writer benchmarks, whatever b.N")

// writersAtOnce has each of envs write, one event after another, until b.N
// events are stored between them and -sustain has passed: write stores
// one, retrying as a client does, and returns the answer it came to (a
// 201 or a failure of the benchmark) and the event's id. midway, if set,
// runs once, beside the writers, when half of both are done, and returns
// how many events of its own it added to path. A puller on
// an observer (its calls uncounted, not held) walks path as reader
// meanwhile, as a device following the stream would. It reports events
// per second, DynamoDB calls per event, and the p50 and p99 time from an
// event's 201 to the puller's first page that lists it.
func writersAtOnce(b *testing.B, hs *apitest.Harness, envs []*apitest.Harness, path, reader string, write func(w int, env *apitest.Harness) (events.APIGatewayV2HTTPResponse, string), midway func() int) {
	var stored atomic.Int64
	var answered sync.Map // event id → time of its 201
	follow := startFollower(hs, path, reader)
	start := time.Now()
	more := func(n int64) bool {
		return stored.Load() < n || time.Since(start) < time.Duration(n)*(*sustain)/time.Duration(b.N)
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	var own atomic.Int64 // events midway added
	if midway != nil {
		wg.Go(func() {
			for more(int64(b.N / 2)) {
				time.Sleep(time.Millisecond)
			}
			own.Store(int64(midway()))
		})
	}
	for w, env := range envs {
		wg.Go(func() {
			for more(int64(b.N)) {
				resp, id := write(w, env)
				if resp.StatusCode != 201 {
					b.Errorf("writer %d: %d %s", w, resp.StatusCode, resp.Body)
					return
				}
				answered.Store(id, time.Now())
				stored.Add(1)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	elapsed := time.Since(start)
	listed := follow(int(stored.Load() + own.Load()))
	var lags []time.Duration
	answered.Range(func(id, at any) bool {
		if seen, ok := listed[id.(string)]; ok {
			lags = append(lags, max(0, seen.Sub(at.(time.Time))))
		} else {
			b.Errorf("event %s answered 201, never listed", id)
		}
		return true
	})
	slices.Sort(lags)
	b.ReportMetric(float64(stored.Load())/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(hs.B.Transport.Total())/float64(stored.Load()), "calls/event")
	if len(lags) > 0 {
		b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-listed-ms")
		b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "p99-listed-ms")
	}
}

// startFollower pulls path as reader, on an observer of hs, from the
// stream's end as it is now, page after page, noting when each event id is
// first listed. The function it returns waits until n events were listed
// (or 30 s passed) and gives the times.
func startFollower(hs *apitest.Harness, path, reader string) func(n int) map[string]time.Time {
	obs := hs.Observer()
	_, cursors, _ := obs.Walk(path, reader, "", 1000)
	cursor := ""
	if len(cursors) > 0 {
		cursor = cursors[len(cursors)-1]
	}
	listed := map[string]time.Time{}
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			evs, cs, last := obs.Walk(path, reader, cursor, 1000)
			now := time.Now()
			if last.StatusCode != 200 {
				hs.T.Errorf("follower: %d %.300s", last.StatusCode, last.Body)
				return
			}
			mu.Lock()
			for _, ev := range evs {
				if _, seen := listed[ev.ID]; !seen {
					listed[ev.ID] = now
				}
			}
			mu.Unlock()
			if len(cs) > 0 {
				cursor = cs[len(cs)-1]
			}
			time.Sleep(time.Millisecond) // a core left to the writers
		}
	}()
	return func(n int) map[string]time.Time {
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			got := len(listed)
			mu.Unlock()
			if got >= n || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(listed)
	}
}

// BenchmarkCatchUp is a new device pulling a user's 20,000 events, with
// pages of 100 events (the most a page held before) and of 1,000. It
// reports the pages, the server's time per catch-up, and the catch-up's
// time at a modelled 50 ms round trip between device and API: pages x 50
// ms, plus the server's time. Run it on dynoxide: kumo's Query walks the
// whole table.
func BenchmarkCatchUp(b *testing.B) {
	const events, roundTrip = 20_000, 50 * time.Millisecond
	hs := apitest.New(b)
	user := "u-" + uuid.NewString()
	seedEvents(b, hs, user, events)
	for _, limit := range []int{100, 1000} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			pages := 0
			for b.Loop() {
				ids, cursors := hs.Drain(user, "", limit)
				if len(ids) != events {
					b.Fatalf("caught up %d events, want %d", len(ids), events)
				}
				pages = len(cursors)
			}
			server := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(pages), "pages")
			b.ReportMetric((time.Duration(pages)*roundTrip + server).Seconds(), "s-at-50ms")
		})
	}
}

// seedEvents stores n small events for user straight through the event
// log, 50 to a transaction, as a batch would.
func seedEvents(b *testing.B, hs *apitest.Harness, user string, n int) {
	b.Helper()
	log := eventstore.New(hs.B.Client, hs.B.Tables.Events, hs.B.Ledger(), ratelimit.Bucket{})
	now := time.Now().UTC()
	for done := 0; done < n; {
		batch := make([]syncevent.Event, min(50, n-done))
		for i := range batch {
			batch[i] = syncevent.Event{Stream: user, ID: uuid.NewString(), Type: "note.created", OccurredAt: "2026-12-02T14:03:00Z",
				ReceivedAt: now, Payload: []byte(`{"noteId":"n-1842","title":"Groceries","items":["milk","eggs"],"done":false}`)}
		}
		rec := idempotency.Record{UserID: user, Key: uuid.NewString(), PayloadHash: "-", StatusCode: 201, ResponseBody: []byte(`{}`),
			Method: "POST", Route: "/seed", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := log.Commit(context.Background(), rec, []eventstore.Change{eventstore.Append(batch...)}, now); err != nil {
			b.Fatal(err)
		}
		done += len(batch)
	}
}
