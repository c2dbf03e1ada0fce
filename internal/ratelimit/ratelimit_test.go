package ratelimit_test

import (
	"testing"
	"time"

	"github.com/sync-events/sync-events/internal/ratelimit"
)

func TestBucketTakesUpToItsBurstThenAtItsRate(t *testing.T) {
	b := ratelimit.Bucket{Rate: 2, Burst: 3}
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var s ratelimit.State
	var ok bool
	for i := range 3 {
		if s, _, ok = b.Take(s, t0); !ok {
			t.Fatalf("take %d of a full bucket of 3 refused", i+1)
		}
	}
	_, wait, ok := b.Take(s, t0)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("an empty bucket: ok %v, wait %v; want a refusal for 500ms", ok, wait)
	}
	if _, _, ok := b.Take(s, t0.Add(499*time.Millisecond)); ok {
		t.Fatal("a token before its time")
	}
	if _, _, ok := b.Take(s, t0.Add(500*time.Millisecond)); !ok {
		t.Fatal("no token at 1/rate")
	}
	if after, _, _ := b.Take(s, t0.Add(time.Hour)); after.Tokens != 2 {
		t.Fatalf("after an hour: %v tokens left, want the burst less one", after.Tokens)
	}
	// A clock behind the last refill (another environment's) neither
	// refills nor takes back: 2.5 tokens stay 2.5, less the one taken.
	half := ratelimit.State{Stored: true, Tokens: 2.5, Refilled: t0}
	if after, _, ok := b.Take(half, t0.Add(-time.Minute)); !ok || after.Tokens != 1.5 {
		t.Fatalf("a clock behind the last refill: ok %v, %v tokens left; want 1.5", ok, after.Tokens)
	}
	if _, _, ok := (ratelimit.Bucket{}).Take(s, t0); !ok {
		t.Fatal("a zero rate limits")
	}
}

func TestLimiterKeepsOneBucketPerKey(t *testing.T) {
	l := ratelimit.NewLimiter(ratelimit.Bucket{Rate: 1, Burst: 2}, 2)
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for range 2 {
		if _, ok := l.Take("flood", now); !ok {
			t.Fatal("within the burst")
		}
	}
	if wait, ok := l.Take("flood", now); ok || wait != time.Second {
		t.Fatalf("past the burst: %v %v", wait, ok)
	}
	if _, ok := l.Take("other", now.Add(time.Millisecond)); !ok {
		t.Fatal("another key paid for the flood")
	}
	if _, ok := l.Take("flood", now.Add(2*time.Millisecond)); ok { // still flooding
		t.Fatal("a token before its time")
	}
	// A third key evicts the key asked for longest ago: "other", not the
	// flood's, which would come back with a full bucket.
	if _, ok := l.Take("third", now.Add(3*time.Millisecond)); !ok {
		t.Fatal("a new key")
	}
	if _, ok := l.Take("flood", now.Add(4*time.Millisecond)); ok {
		t.Fatal("the flooding key was forgotten before quieter ones")
	}
}

// Wait says when a token comes without taking one: a refusal limit looks
// before the request and takes after it, only if it was refused.
func TestLimiterWaitTakesNothing(t *testing.T) {
	l := ratelimit.NewLimiter(ratelimit.Bucket{Rate: 1, Burst: 2}, 8)
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for range 5 {
		if w := l.Wait("k", now); w != 0 {
			t.Fatalf("a fresh key waits %v", w)
		}
	}
	l.Take("k", now)
	l.Take("k", now)
	if w := l.Wait("k", now); w != time.Second {
		t.Fatalf("an empty bucket: wait %v, want 1s", w)
	}
	if w := l.Wait("k", now.Add(time.Second)); w != 0 {
		t.Fatalf("a second later: wait %v", w)
	}
	if off := ratelimit.NewLimiter(ratelimit.Bucket{}, 8); off.Wait("k", now) != 0 {
		t.Fatal("no limit waits")
	}
}
