// Package ratelimit owns the token bucket the service limits each user's
// rate with: its arithmetic, on a state its caller keeps wherever it
// likes (package eventstore keeps one on a stream's head or a member, in
// the same transaction as the change it limits), and a Limiter that keeps
// one per user in this execution environment's memory, for reads.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// Bucket is a token bucket: each request takes a token; tokens come back
// at Rate a second, up to Burst. A zero Rate is no limit.
type Bucket struct {
	Rate, Burst float64
}

// State is a bucket's state: the tokens left when it was last taken from,
// and when that was. The zero State is a full bucket.
type State struct {
	Stored   bool
	Tokens   float64
	Refilled time.Time
}

// Take takes a token at now: the state after, or, when none is there, how
// long until one is.
func (b Bucket) Take(s State, now time.Time) (after State, wait time.Duration, ok bool) {
	if b.Rate <= 0 {
		return s, 0, true
	}
	tokens := b.Burst
	if s.Stored {
		// A clock behind the one that refilled it last gives no tokens:
		// environments' clocks disagree by milliseconds.
		elapsed := max(now.Sub(s.Refilled), 0)
		tokens = math.Min(b.Burst, s.Tokens+elapsed.Seconds()*b.Rate)
	}
	if tokens < 1 {
		return s, time.Duration((1 - tokens) / b.Rate * float64(time.Second)), false
	}
	return State{Stored: true, Tokens: tokens - 1, Refilled: now.Truncate(time.Millisecond)}, 0, true
}

// Limiter keeps a bucket per key in memory, at most maxKeys of them (the
// key asked for longest ago goes first past that, so a key that keeps
// asking is never forgotten and refilled): a limit per execution
// environment, which Lambda runs as many of as there are requests at once.
type Limiter struct {
	bucket  Bucket
	maxKeys int
	mu      sync.Mutex
	states  map[string]keyed
}

type keyed struct {
	State
	seen time.Time
}

// NewLimiter returns a Limiter of bucket, keeping at most maxKeys keys.
func NewLimiter(bucket Bucket, maxKeys int) *Limiter {
	return &Limiter{bucket: bucket, maxKeys: maxKeys, states: map[string]keyed{}}
}

// Take takes a token of key's bucket at now, or says how long until one is.
func (l *Limiter) Take(key string, now time.Time) (wait time.Duration, ok bool) {
	if l.bucket.Rate <= 0 {
		return 0, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, known := l.states[key]
	if !known && len(l.states) >= l.maxKeys {
		l.evictOldest()
	}
	after, wait, ok := l.bucket.Take(s.State, now)
	l.states[key] = keyed{State: after, seen: now}
	return wait, ok
}

// Wait is how long until key's bucket holds a token at now: 0 when it
// does. It takes none: for a limit on what follows a request (a refusal,
// say), taken with Take once that is known.
func (l *Limiter) Wait(key string, now time.Time) time.Duration {
	if l.bucket.Rate <= 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, wait, _ := l.bucket.Take(l.states[key].State, now)
	return wait
}

// evictOldest drops the key asked for longest ago: a full bucket by now,
// most likely, which forgetting loses nothing of.
func (l *Limiter) evictOldest() {
	var oldest string
	var at time.Time
	for k, s := range l.states {
		if oldest == "" || s.seen.Before(at) {
			oldest, at = k, s.seen
		}
	}
	delete(l.states, oldest)
}
