package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sync-events/sync-events/idempotency"
)

func TestBackoffStaysWithinItsCeiling(t *testing.T) {
	b := idempotency.Backoff{Base: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	for _, tc := range []struct {
		n       int
		ceiling time.Duration
	}{{1, 20 * time.Millisecond}, {2, 40 * time.Millisecond}, {4, 160 * time.Millisecond}, {5, 200 * time.Millisecond}, {40, 200 * time.Millisecond}, {100, 200 * time.Millisecond}} {
		longest := time.Duration(0)
		for range 2000 {
			d := b.Delay(tc.n)
			if d < time.Millisecond || d > tc.ceiling {
				t.Fatalf("Delay(%d) = %v, want 1ms to %v", tc.n, d, tc.ceiling)
			}
			longest = max(longest, d)
		}
		// Full jitter spreads over the whole range, not its bottom.
		if longest < tc.ceiling/2 {
			t.Errorf("Delay(%d): longest of 2000 is %v, under half the ceiling %v", tc.n, longest, tc.ceiling)
		}
	}
}

func TestBackoffWaitEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (idempotency.Backoff{Base: time.Hour, Max: time.Hour}).Wait(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an ended context: %v", err)
	}
}
