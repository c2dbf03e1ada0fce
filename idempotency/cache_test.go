package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
)

// environment is one Lambda execution environment: a flow with a replay
// cache of its own on the fixture's tables, and a clock the test sets.
type environment struct {
	flow *idempotency.Flow[types.TransactWriteItem]
	now  time.Time
}

func (f *fixture) environment(start time.Time) *environment {
	e := &environment{now: start}
	e.flow = idempotency.NewFlow(f.store, idempotency.Options{
		Retention: time.Hour, Cache: idempotency.NewReplayCache(1 << 20), Now: func() time.Time { return e.now },
	})
	return e
}

// do sends req at offset after t0 and reports the result and the DynamoDB
// calls it cost.
func (f *fixture) do(t *testing.T, e *environment, at time.Time, req idempotency.Request, exec idempotency.Executor[types.TransactWriteItem]) (idempotency.Result, int) {
	t.Helper()
	e.now = at
	f.b.Transport.Reset()
	res, err := e.flow.Do(context.Background(), req, exec)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, n := range f.b.Transport.Calls() {
		calls += n
	}
	return res, calls
}

func TestReplayCacheAnswersWithoutDynamoDB(t *testing.T) {
	f := newFixture(t)
	t0 := time.Now()
	warm := f.environment(t0)
	key := uuid.NewString()
	same, other := request("alice", key, `{"a":1}`), request("alice", key, `{"a":2}`)
	if res, calls := f.do(t, warm, t0, same, f.executor("e1", `{"v":1}`)); res.Outcome != idempotency.Executed || calls != 1 {
		t.Fatalf("fresh: %+v after %d calls", res, calls)
	}
	res, calls := f.do(t, warm, t0.Add(time.Second), same, f.executor("e1", `{"v":1}`))
	if res.Outcome != idempotency.Replayed || !res.FromCache || string(res.Body) != `{"v":1}` || calls != 0 {
		t.Fatalf("replay: %+v %s after %d calls, want from memory with 0", res, res.Body, calls)
	}
	res, calls = f.do(t, warm, t0.Add(2*time.Second), other, f.executor("e2", `{"v":2}`))
	if res.Outcome != idempotency.KeyReused || !res.FromCache || calls != 0 {
		t.Fatalf("other body: %+v after %d calls, want key_reused from memory with 0", res, calls)
	}
	if res, _ := f.do(t, warm, t0.Add(3*time.Second), request("bob", key, `{"a":1}`), f.executor("e3", `{"v":3}`)); res.Outcome != idempotency.Executed {
		t.Fatalf("another user's same key: %+v, want its own execution", res)
	}
	// The cache is read before the executor runs: the warm replay and the
	// warm 409 computed nothing, so an executor that reads state pays
	// nothing for them either.
	if f.runs.Load() != 2 || f.markers(t) != 2 {
		t.Fatalf("%d executions, %d writes; want 2 computed (the fresh ones) and 2 stored", f.runs.Load(), f.markers(t))
	}
}

// TestReplayCacheStopsBeforeExpiry: a record another environment committed
// is read near its expiry; the reader answers from memory only until
// SkewMargin before the expiry, then asks DynamoDB again, and after the
// expiry executes afresh, as it would with no cache at all.
func TestReplayCacheStopsBeforeExpiry(t *testing.T) {
	f := newFixture(t)
	t0 := time.Now()
	writer := f.environment(t0)
	req, exec := request("alice", uuid.NewString(), `{"a":1}`), f.executor("e1", `{"v":1}`)
	if res, _ := f.do(t, writer, t0, req, exec); res.Outcome != idempotency.Executed {
		t.Fatalf("fresh: %+v", res)
	}
	expiry := t0.Add(time.Hour) // the fixture's retention
	reader := f.environment(t0)
	steps := []struct {
		at        time.Time
		outcome   idempotency.Outcome
		fromCache bool
	}{
		{expiry.Add(-5 * time.Minute), idempotency.Replayed, false},
		{expiry.Add(-idempotency.SkewMargin - time.Second), idempotency.Replayed, true},
		{expiry.Add(-idempotency.SkewMargin + time.Second), idempotency.Replayed, false},
		{expiry.Add(-time.Second), idempotency.Replayed, false},
		{expiry.Add(time.Second), idempotency.Executed, false},
	}
	for _, s := range steps {
		res, calls := f.do(t, reader, s.at, req, f.executor("e2", `{"v":2}`))
		if res.Outcome != s.outcome || res.FromCache != s.fromCache || (calls == 0) != s.fromCache {
			t.Errorf("%v before expiry: %s from cache %v after %d calls; want %s from cache %v",
				expiry.Sub(s.at), res.Outcome, res.FromCache, calls, s.outcome, s.fromCache)
		}
	}
}

func TestReplayCacheForgetsAfterMaxCacheAge(t *testing.T) {
	f := newFixture(t)
	t0 := time.Now()
	e := f.environment(t0)
	req := request("alice", uuid.NewString(), `{"a":1}`)
	f.do(t, e, t0, req, f.executor("e1", `{"v":1}`))
	if res, calls := f.do(t, e, t0.Add(idempotency.MaxCacheAge-time.Second), req, f.executor("e1", `{"v":1}`)); !res.FromCache || calls != 0 {
		t.Fatalf("within MaxCacheAge: %+v after %d calls", res, calls)
	}
	if res, calls := f.do(t, e, t0.Add(idempotency.MaxCacheAge), req, f.executor("e1", `{"v":1}`)); res.FromCache || calls == 0 || res.Outcome != idempotency.Replayed {
		t.Fatalf("at MaxCacheAge: %+v after %d calls, want a replay read from DynamoDB", res, calls)
	}
}

// failingStore fails every commit the way an unreachable DynamoDB does, or
// with a failed business condition.
type failingStore struct{ err error }

func (s failingStore) Commit(context.Context, idempotency.Record, []types.TransactWriteItem, time.Time) error {
	return s.err
}

func (failingStore) Get(context.Context, string, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, nil
}

func TestReplayCacheHoldsOnlyCommittedOrReadRecords(t *testing.T) {
	for _, err := range []error{errors.New("connection reset"), idempotency.RefusedAt(0), idempotency.ErrTooLarge} {
		t.Run(err.Error(), func(t *testing.T) {
			c := idempotency.NewReplayCache(1 << 20)
			flow := idempotency.NewFlow[types.TransactWriteItem](failingStore{err}, idempotency.Options{Retention: time.Hour, Cache: c})
			exec := func(context.Context, time.Time) (idempotency.Execution[types.TransactWriteItem], error) {
				return idempotency.Execution[types.TransactWriteItem]{Response: idempotency.Response{StatusCode: 201, Body: []byte(`{}`)}}, nil
			}
			for range 2 {
				if res, _ := flow.Do(context.Background(), request("alice", "k", `{}`), exec); res.FromCache || res.Outcome == idempotency.Executed {
					t.Fatalf("answered %+v from a commit that failed", res)
				}
			}
			if c.Len() != 0 {
				t.Fatalf("%d entries after failed commits", c.Len())
			}
		})
	}
}

// committingStore commits everything and holds nothing, so that only the
// cache keeps records.
type committingStore struct{}

func (committingStore) Commit(context.Context, idempotency.Record, []types.TransactWriteItem, time.Time) error {
	return nil
}

func (committingStore) Get(context.Context, string, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, nil
}

// TestReplayCacheStaysUnderItsBound commits 200,000 distinct keys through
// a 1 MiB cache: the cache's own count stays under the bound, and so does
// what the Go heap holds for it, within its bookkeeping.
//
// What the cache holds is measured as the live heap with the cache
// reachable minus the live heap once it is dropped, each after two
// collections (the second empties sync.Pool's victim caches): the
// difference is exactly what only the cache keeps alive, whatever else the
// 200,000 requests left behind. The margin is 2x the bound: the bound
// counts entryOverhead (256 bytes) per entry for the map slot, the list
// element, the entry and the string headers, while the heap also rounds
// every allocation up to its size class and keeps the map's buckets at the
// size its peak count needed; measured, 1.16x the bound, the same on
// every run. With entryOverhead counted as 0 it is 2.3x.
func TestReplayCacheStaysUnderItsBound(t *testing.T) {
	const bound = 1 << 20
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	c := idempotency.NewReplayCache(bound)
	flow := idempotency.NewFlow[types.TransactWriteItem](committingStore{}, idempotency.Options{Retention: time.Hour, Cache: c})
	body := []byte(`{"id":"4d7c8f0e-3f1b-4c44-9d6e-1f2a3b4c5d6e","type":"note.created","occurredAt":"2026-12-02T14:03:00Z","receivedAt":"2026-12-02T14:03:01.000Z"}`)
	exec := func(context.Context, time.Time) (idempotency.Execution[types.TransactWriteItem], error) {
		return idempotency.Execution[types.TransactWriteItem]{Response: idempotency.Response{StatusCode: 201, Body: body}}, nil
	}
	for i := range 200_000 {
		if _, err := flow.Do(context.Background(), request(fmt.Sprintf("user-%d", i%50), uuid.NewString(), `{}`), exec); err != nil {
			t.Fatal(err)
		}
		if i%10_000 == 0 && c.Bytes() > bound {
			t.Fatalf("after %d keys the cache counts %d bytes, over its %d", i, c.Bytes(), bound)
		}
	}
	entries, counted := c.Len(), c.Bytes()
	withCache := heap()
	runtime.KeepAlive(c)
	runtime.KeepAlive(flow)
	c, flow = nil, nil // dropped, so that the next measurement leaves them out
	held := int64(withCache) - int64(heap())
	t.Logf("%d entries, %d bytes counted, %d bytes of heap (%.2fx the bound)", entries, counted, held, float64(held)/bound)
	if counted > bound || entries < bound/1024 {
		t.Fatalf("%d entries in %d bytes: want the bound used and not passed", entries, counted)
	}
	if held > 2*bound {
		t.Fatalf("the heap holds %d bytes for a cache bounded at %d: entryOverhead undercounts", held, bound)
	}
}
