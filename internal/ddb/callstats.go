package ddb

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// CallStats is what one request's DynamoDB calls cost: operations asked
// for, attempts the SDK made for them (retries are the difference), time
// spent in attempts, and attempts DynamoDB refused for load.
type CallStats struct {
	Calls     int
	Attempts  int
	Latency   time.Duration
	Throttles int
}

// Retries is the attempts made beyond the first of each call.
func (s CallStats) Retries() int { return s.Attempts - s.Calls }

type callStatsKey struct{}

// statsBox is shared by the calls of one request; the SDK may run them on
// other goroutines (none today, but nothing promises it).
type statsBox struct {
	mu sync.Mutex
	s  CallStats
}

func (b *statsBox) add(f func(*CallStats)) {
	b.mu.Lock()
	f(&b.s)
	b.mu.Unlock()
}

// CountCalls returns a context under which the calls of a client made by
// WithCallStats are counted, and a function that reads the count so far.
func CountCalls(ctx context.Context) (context.Context, func() CallStats) {
	b := &statsBox{}
	return context.WithValue(ctx, callStatsKey{}, b), func() CallStats {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.s
	}
}

func statsFrom(ctx context.Context) *statsBox {
	b, _ := ctx.Value(callStatsKey{}).(*statsBox)
	return b
}

// WithCallStats returns a copy of client whose calls are counted under a
// context from CountCalls (and cost nothing under any other).
func WithCallStats(client *dynamodb.Client) *dynamodb.Client {
	return dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		// No clip needed: Options() and New each copy APIOptions first, so
		// this append never reaches the original client's slice.
		o.APIOptions = append(o.APIOptions, addCallStats)
	})
}

func addCallStats(stack *middleware.Stack) error {
	calls := middleware.InitializeMiddlewareFunc("CountCalls", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		if b := statsFrom(ctx); b != nil {
			b.add(func(s *CallStats) { s.Calls++ })
		}
		return next.HandleInitialize(ctx, in)
	})
	// After the retry middleware, so that it runs once per attempt.
	attempts := middleware.FinalizeMiddlewareFunc("CountAttempts", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		b := statsFrom(ctx)
		if b == nil {
			return next.HandleFinalize(ctx, in)
		}
		start := time.Now()
		out, md, err := next.HandleFinalize(ctx, in)
		took := time.Since(start)
		b.add(func(s *CallStats) {
			s.Attempts++
			s.Latency += took
			// Throttles inside a cancelled transaction's reasons count too.
			if dynamodbstore.IsThrottle(err) {
				s.Throttles++
			}
		})
		return out, md, err
	})
	if err := stack.Initialize.Add(calls, middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(attempts, "Retry", middleware.After)
}
