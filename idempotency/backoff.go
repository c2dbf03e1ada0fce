package idempotency

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is "full jitter" backoff, the wait AWS recommends between
// retries of a call that collided or was refused for load: a random delay
// up to a ceiling that doubles with each attempt, so that colliding
// retries spread out instead of colliding again. The flow waits so between
// attempts of a conflicting transaction (Base 10 ms, Max 200 ms); a
// client of DynamoDB's batch calls can wait so before sending unprocessed
// items again.
type Backoff struct {
	// Base is the ceiling of the first retry's delay, doubled for each
	// one after it; Max caps it.
	Base, Max time.Duration
}

// Delay is the wait before retry n (1 is the first retry): at least 1 ms,
// at most min(Base<<n, Max).
func (b Backoff) Delay(n int) time.Duration {
	ceiling := b.Max
	if n < 32 && b.Base<<n > 0 && b.Base<<n < b.Max {
		ceiling = b.Base << n
	}
	if ceiling <= 0 {
		return time.Millisecond
	}
	// Uniform in (0, ceiling], and never under 1 ms, so that the ceiling
	// holds: Max is the longest wait.
	return max(time.Duration(rand.Int64N(int64(ceiling))+1), time.Millisecond)
}

// Wait sleeps Delay(n), or until ctx ends, whose error it then returns.
func (b Backoff) Wait(ctx context.Context, n int) error {
	t := time.NewTimer(b.Delay(n))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
