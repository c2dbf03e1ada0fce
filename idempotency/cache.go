package idempotency

import (
	"container/list"
	"sync"
	"time"
)

// The replay cache's timing rules.
const (
	// SkewMargin is how long before a record's ExpiresAt the cache stops
	// answering for it. Until ExpiresAt the ledger condition, evaluated with
	// this environment's clock, would find the record live and the answer be
	// the same; the margin covers the clocks that could disagree with this
	// one: another environment committing a new record over an expired one,
	// and DynamoDB's TTL deleting it. Lambda's clocks are kept within
	// milliseconds of each other (Amazon Time Sync); a minute is far more.
	SkewMargin = time.Minute
	// MaxCacheAge is the longest an entry stays in memory, whatever its
	// record's expiry: a record erased from the ledger is replayed from a
	// warm environment for at most this long.
	MaxCacheAge = 10 * time.Minute
	// entryOverhead approximates what an entry costs beyond its strings: the
	// map slot, the list element, the struct and the time values.
	entryOverhead = 256
)

// ReplayCache keeps, in memory and bounded by bytes, the ledger records this
// execution environment committed or read, so that a retry of the same
// (user, key) is answered with no DynamoDB call. A ledger record never
// changes before it expires, so an entry says what DynamoDB would say until
// its record expires; it is dropped earlier (SkewMargin, MaxCacheAge), and
// the least recently used entries go first when the bound is reached.
type ReplayCache struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	order    *list.List // of *cacheEntry, most recently used first
	entries  map[cacheKey]*list.Element
}

type cacheKey struct{ userID, key string }

type cacheEntry struct {
	id      cacheKey
	rec     Record
	size    int
	dropsAt time.Time
}

// NewReplayCache returns a cache of at most maxBytes; 0 or less disables it.
func NewReplayCache(maxBytes int) *ReplayCache {
	if maxBytes <= 0 {
		return nil
	}
	return &ReplayCache{maxBytes: maxBytes, order: list.New(), entries: map[cacheKey]*list.Element{}}
}

// Bytes is what the entries cost, as the bound counts it.
func (c *ReplayCache) Bytes() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Len is the number of entries.
func (c *ReplayCache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// get returns the record for (userID, key) if one is held and may still
// answer at now.
func (c *ReplayCache) get(userID, key string, now time.Time) (Record, bool) {
	if c == nil {
		return Record{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[cacheKey{userID, key}]
	if !ok {
		return Record{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.dropsAt) {
		c.remove(el)
		return Record{}, false
	}
	c.order.MoveToFront(el)
	return e.rec, true
}

// put keeps rec, a record committed or read at now. A record too close to
// its expiry, or too large for the bound, is not kept.
func (c *ReplayCache) put(rec Record, now time.Time) {
	if c == nil {
		return
	}
	dropsAt := now.Add(MaxCacheAge)
	if beforeExpiry := rec.ExpiresAt.Add(-SkewMargin); beforeExpiry.Before(dropsAt) {
		dropsAt = beforeExpiry
	}
	rec.Effects = nil   // an answer needs none, and they would go stale
	rec.canonical = nil // the request's, not the record's
	size := entryOverhead + len(rec.UserID) + len(rec.Key) + len(rec.PayloadHash) + len(rec.ResponseBody) + len(rec.Method) + len(rec.Route) + len(rec.HashScheme)
	if !now.Before(dropsAt) || size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	id := cacheKey{rec.UserID, rec.Key}
	if el, ok := c.entries[id]; ok {
		c.remove(el)
	}
	c.entries[id] = c.order.PushFront(&cacheEntry{id: id, rec: rec, size: size, dropsAt: dropsAt})
	c.bytes += size
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

func (c *ReplayCache) remove(el *list.Element) {
	e := c.order.Remove(el).(*cacheEntry)
	delete(c.entries, e.id)
	c.bytes -= e.size
}
