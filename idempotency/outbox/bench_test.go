package outbox_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/idempotency/outbox"
)

// BenchmarkMutation is one fresh mutation through the flow on the test
// kit's backend (kumo, or DYNAMODB_ENDPOINT's), with no effect and with
// one delivered in the process, in one run: what an effect adds to the
// request (calls/op counts the request's own calls, taken before the
// delivery starts), and how long after the answer the downstream has it
// (delivered-p50-ms, delivered-p99-ms).
//
//	go test -run '^$' -bench BenchmarkMutation -count 3 ./idempotency/outbox
func BenchmarkMutation(b *testing.B) {
	for _, effects := range []int{0, 1} {
		name := "effects=0"
		if effects == 1 {
			name = "effects=1"
		}
		b.Run(name, func(b *testing.B) {
			kit := dynamotest.Start(b)
			ledger := kit.LedgerTable(b)
			var (
				mu        sync.Mutex
				answered  = map[string]time.Time{}
				latencies []time.Duration
			)
			box := outbox.New(dynamodbstore.New(kit.Client, ledger), map[string]outbox.Deliverer{
				"email": func(_ context.Context, d outbox.Delivery) error {
					mu.Lock()
					defer mu.Unlock()
					latencies = append(latencies, time.Since(answered[d.UserID+" "+string(d.Payload)]))
					return nil
				},
			}, outbox.Options{})
			calls := 0
			flow := dynamodbstore.NewFlow(kit.Client, ledger, idempotency.Options{Committed: func(ctx context.Context, rec idempotency.Record) {
				calls += kit.Transport.Total() // the request's, before delivery starts
				mu.Lock()
				answered[rec.UserID+" "+rec.Key] = time.Now()
				mu.Unlock()
				box.Committed(ctx, rec)
			}})
			b.ResetTimer()
			for b.Loop() {
				key := uuid.NewString()
				var fx []idempotency.Effect
				if effects == 1 {
					fx = []idempotency.Effect{{Name: "receipt", Kind: "email", Payload: []byte(key)}}
				}
				b.StopTimer()
				box.Wait() // the last delivery's calls and time are not this request's
				b.StartTimer()
				kit.Transport.Reset()
				req := idempotency.Request{UserID: "alice", Key: key, Method: "POST", Route: "/orders", CanonicalBody: []byte(`{}`)}
				_, err := flow.Do(context.Background(), req, func(context.Context, time.Time) (dynamodbstore.Execution, error) {
					return dynamodbstore.Execution{Response: idempotency.Response{StatusCode: 201, Body: []byte(`{}`)}, Effects: fx}, nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if effects == 0 {
					calls += kit.Transport.Total()
				}
			}
			b.StopTimer()
			box.Wait()
			b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
			if len(latencies) > 0 {
				slices.Sort(latencies)
				b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "delivered-p50-ms")
				b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "delivered-p99-ms")
			}
		})
	}
}
