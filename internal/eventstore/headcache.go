package eventstore

import (
	"sync"
	"time"
)

// maxHeadCacheBytes bounds the heads an environment remembers, counted as
// each user id's bytes plus headEntryOverhead: about 1 MiB whatever the
// length of the user ids (from 10,000 users of 2 KiB ids to 20,000 of 36
// bytes), where a count alone let the longest ids take 32 MiB.
const (
	maxHeadCacheBytes = 1 << 20
	// headEntryOverhead is a map entry's cost besides the user id: the
	// string header, the head (a sequence number and the bucket's state,
	// a time.Time among them) and the map's own share, about 112 bytes.
	headEntryOverhead = 112
)

// headCache is the last head an environment saw of each user. A wrong
// entry costs one more call, never a wrong position nor a wrong refusal:
// the head's condition is what decides, and an older head's bucket has
// no fewer tokens than the real one.
type headCache struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	heads    map[string]Head
	// busy is, for a space whose head a commit found moved, until when
	// its writes are accepted rather than committed at the head.
	busy map[string]time.Time
}

// contended reports whether stream's head was found moved lately.
func (c *headCache) contended(stream string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.busy[stream]
	if ok && !now.Before(until) {
		delete(c.busy, stream)
		return false
	}
	return ok
}

// contend marks stream contended until then. Few streams are busy at
// once; past maxBusy the oldest marks go (the cost: a call more).
func (c *headCache) contend(stream string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.busy[stream]; !ok && len(c.busy) >= maxBusy {
		for other := range c.busy {
			delete(c.busy, other)
			break
		}
	}
	c.busy[stream] = until
}

// maxBusy bounds the contended spaces an environment remembers.
const maxBusy = 1024

func newHeadCache(maxBytes int) *headCache {
	return &headCache{maxBytes: maxBytes, heads: map[string]Head{}, busy: map[string]time.Time{}}
}

func (c *headCache) get(user string) Head {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heads[user]
}

func (c *headCache) put(user string, h Head) {
	size := len(user) + headEntryOverhead
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.heads[user]; !ok {
		for other := range c.heads { // map order: arbitrary users go
			if c.bytes+size <= c.maxBytes {
				break
			}
			delete(c.heads, other)
			c.bytes -= len(other) + headEntryOverhead
		}
		c.bytes += size
	}
	c.heads[user] = h
}
