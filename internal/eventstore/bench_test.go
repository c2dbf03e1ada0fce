package eventstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// BenchmarkCommitAtStoredEvents is one mutation's transaction (a ledger
// record and its event) on tables already holding N of each, on the backend
// the tests run on. A backend whose transaction time grows with N makes
// every figure measured through it a figure of the backend.
func BenchmarkCommitAtStoredEvents(b *testing.B) {
	for _, stored := range []int{0, 5_000, 20_000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			be := ddbtest.Start(b)
			log := eventstore.New(be.Client, be.Tables.Events, be.Ledger(), ratelimit.Bucket{})
			commit := func(n int) error {
				rec, evs := mutation(fmt.Sprintf("user-%02d", n%20))
				return log.Commit(context.Background(), rec, []eventstore.Change{eventstore.Append(evs...)}, rec.CreatedAt)
			}
			seed(b, stored, commit)
			b.ResetTimer()
			n := 0
			for b.Loop() {
				n++
				if err := commit(n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// seed commits n mutations, a few at a time.
func seed(b *testing.B, n int, commit func(int) error) {
	b.Helper()
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := commit(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// mutation is what POST commits for a small event of user's.
func mutation(user string) (idempotency.Record, []syncevent.Event) {
	now := time.Now().UTC()
	ev := syncevent.Event{ID: uuid.NewString(), Stream: user, Type: "note.created", OccurredAt: "2026-12-02T14:03:00Z",
		Payload: []byte(`{"title":"Groceries"}`), ReceivedAt: now.Truncate(time.Millisecond)}
	rec := idempotency.Record{UserID: user, Key: uuid.NewString(), PayloadHash: "0123456789abcdef", StatusCode: 201,
		ResponseBody: ev.CreatedBody(), Method: "POST", Route: "/api/v1/sync/events", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	return rec, []syncevent.Event{ev}
}
