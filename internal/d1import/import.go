package d1import

import (
	"context"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// The route and method that the sync API records for a posted event
// (POST /api/v1/sync/events): what the original's ledger answered, unless
// the operator says otherwise.
const (
	DefaultRoute  = "/api/v1/sync/events"
	DefaultMethod = http.MethodPost
)

// Reason says why a row was refused.
type Reason string

// Why rows are refused: each a fault of the row, which no guess repairs.
const (
	KeyNotUUID        Reason = "key is not a UUID"
	KeyCaseCollision  Reason = "key differs only in case from another key of the same user"
	UserEmpty         Reason = "user_id is empty"
	UserNotMapped     Reason = "user_id has no line in the user map"
	StatusOutOfRange  Reason = "status_code is not an integer from 100 to 599"
	HashNotHex        Reason = "payload_hash is not 64 hexadecimal digits"
	BodyNotJSON       Reason = "response_body is not JSON"
	CreatedAtBad      Reason = "created_at is not an RFC 3339 time"
	TooLargeForRecord Reason = "the record is over DynamoDB's limits (400 KB an item, 2048 bytes a user id)"
)

// Inserter is where records go: dynamodbstore.Store.Insert.
type Inserter interface {
	Insert(ctx context.Context, rec idempotency.Record) (written bool, err error)
}

// Options say how rows become records.
type Options struct {
	// Route and Method are those of the mutation the original's ledger
	// answered; empty: DefaultRoute, DefaultMethod.
	Route, Method string
	// Retention is the service's (IdempotencyRetention): a record expires
	// at created_at plus Retention, and a row already past it is skipped.
	// 0 is idempotency.DefaultRetention.
	Retention time.Duration
	// UserMap, if not nil, gives each old user id its new one (the new
	// identity provider's sub); a row of an id it lacks is refused.
	UserMap map[string]string
	// DryRun checks every row and counts what would be written, and
	// writes nothing (the store is not called: whether a key is already
	// there is not known).
	DryRun bool
	// Workers is how many writes are in flight at once; 0 is 16.
	Workers int
	// Attempts is how many times a write throttled or failed on the
	// service's side is tried, with a growing wait; 0 is 10.
	Attempts int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Progress, if set, is called with the counts so far every
	// ProgressEvery (0: two seconds) while the import runs.
	Progress      func(Counts)
	ProgressEvery time.Duration
}

// Refusal is one refused row: its key's first 8 characters, as the
// export spells it (never the whole key, never the user), and why.
type Refusal struct {
	KeyPrefix string
	Reason    Reason
}

// Counts is what became of the rows.
type Counts struct {
	// Rows is how many the export holds; Read, how many were looked at.
	Rows, Read int
	// Imported were written (in a dry run: would be).
	Imported int
	// Present were not written: a record of the key was already in the
	// ledger (an earlier run, or a request the service answered).
	Present int
	// Expired were skipped: created_at plus the retention is past.
	Expired int
	// Refused lists the rows refused, in the export's order.
	Refused []Refusal
	// Retries is how many writes were tried again after throttling or a
	// failure on the service's side.
	Retries int
	// Elapsed is the time since the import began.
	Elapsed time.Duration
}

// ReadUserMap reads a user map: CSV, one "old id,new id" a line, no
// header. An old id given twice, or an empty id, is an error.
func ReadUserMap(r io.Reader) (map[string]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 2
	out := map[string]string{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("user map: %w", err)
		}
		if rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("user map: record %d has an empty id", line)
		}
		if _, dup := out[rec[0]]; dup {
			return nil, fmt.Errorf("user map: record %d maps an old id already mapped", line)
		}
		out[rec[0]] = rec[1]
	}
}

// Import writes each row of src to store as a record the service replays
// (see package doc), and counts what became of them. A row whose key is
// already in the ledger is left as it is there. An error stops the
// import (a write that kept failing, a store that refuses): what was
// written stays, and running it again is safe; the counts so far come
// with it.
func Import(ctx context.Context, src *Source, store Inserter, opts Options) (Counts, error) {
	opts = withDefaults(opts)
	start := opts.Now()
	var c Counts
	var err error
	if c.Rows, err = src.Count(ctx); err != nil {
		return c, fmt.Errorf("count %s: %w", Table, err)
	}
	collisions, err := caseCollisions(ctx, src, opts.UserMap)
	if err != nil {
		return c, err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex // guards c
	recs := make(chan idempotency.Record, opts.Workers*4)
	var wg sync.WaitGroup
	for range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rec := range recs {
				written, retries, err := insert(ctx, store, rec, opts.Attempts)
				mu.Lock()
				c.Retries += retries
				switch {
				case err == nil && written:
					c.Imported++
				case err == nil:
					c.Present++
				case errors.Is(err, idempotency.ErrTooLarge) || errcode.CodeOf(err) == errcode.ValidationFailed:
					c.Refused = append(c.Refused, Refusal{keyPrefix(rec.Key), TooLargeForRecord})
				default:
					cancel(fmt.Errorf("write the record of key %s…: %w", keyPrefix(rec.Key), err))
				}
				mu.Unlock()
			}
		}()
	}
	stopProgress := progress(&mu, &c, start, opts)

	now := opts.Now()
	readErr := src.each(ctx, true, func(row Row) error {
		rec, reason := record(row, opts, collisions)
		mu.Lock()
		c.Read++
		switch {
		case reason != "":
			c.Refused = append(c.Refused, Refusal{keyPrefix(row.Key), reason})
		case !rec.ExpiresAt.After(now):
			c.Expired++
		case opts.DryRun:
			c.Imported++
		}
		mu.Unlock()
		if reason != "" || !rec.ExpiresAt.After(now) || opts.DryRun {
			return nil
		}
		select {
		case recs <- rec:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(recs)
	wg.Wait()
	stopProgress()
	c.Elapsed = opts.Now().Sub(start)
	if cause := context.Cause(ctx); cause != nil {
		return c, cause
	}
	return c, readErr
}

func withDefaults(o Options) Options {
	if o.Route == "" {
		o.Route = DefaultRoute
	}
	if o.Method == "" {
		o.Method = DefaultMethod
	}
	if o.Retention <= 0 {
		o.Retention = idempotency.DefaultRetention
	}
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.Attempts <= 0 {
		o.Attempts = 10
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 2 * time.Second
	}
	return o
}

// progress calls opts.Progress every opts.ProgressEvery until the
// function it returns is called, which reports once more.
func progress(mu *sync.Mutex, c *Counts, start time.Time, opts Options) (stop func()) {
	if opts.Progress == nil {
		return func() {}
	}
	report := func() {
		mu.Lock()
		snap := *c
		snap.Refused = slices.Clone(c.Refused)
		mu.Unlock()
		snap.Elapsed = opts.Now().Sub(start)
		opts.Progress(snap)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(opts.ProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				report()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		report()
	}
}

// insert writes rec, trying again, with a growing wait, while the store
// answers that a later call can get past (throttling, a server error).
func insert(ctx context.Context, store Inserter, rec idempotency.Record, attempts int) (written bool, retries int, err error) {
	backoff := idempotency.Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second}
	for attempt := 1; ; attempt++ {
		written, err = store.Insert(ctx, rec)
		if err == nil || attempt >= attempts || !retryable(err) {
			return written, attempt - 1, err
		}
		if werr := backoff.Wait(ctx, attempt); werr != nil {
			return false, attempt - 1, err
		}
	}
}

func retryable(err error) bool {
	return dynamodbstore.IsThrottle(err) || errcode.CodeOf(err) == errcode.ServiceUnavailable
}

// userKey is a user's key as this service stores it.
type userKey struct{ user, key string }

// caseCollisions finds the keys of one user (after the user map) that
// two rows or more spell: keys that differ only in case, which this
// service reads as one. Only they are kept in memory.
func caseCollisions(ctx context.Context, src *Source, userMap map[string]string) (map[userKey]bool, error) {
	seen := map[userKey]bool{}
	collisions := map[userKey]bool{}
	err := src.each(ctx, false, func(row Row) error {
		key, ok := parseKey(row.Key)
		if !ok {
			return nil
		}
		user, ok := mapUser(row.UserID, userMap)
		if !ok {
			return nil
		}
		uk := userKey{user, key}
		if seen[uk] {
			collisions[uk] = true
		}
		seen[uk] = true
		return nil
	})
	return collisions, err
}

// record is the record row becomes, or why it is refused.
func record(row Row, opts Options, collisions map[userKey]bool) (idempotency.Record, Reason) {
	key, ok := parseKey(row.Key)
	if !ok {
		return idempotency.Record{}, KeyNotUUID
	}
	if s, _ := row.UserID.(string); s == "" {
		return idempotency.Record{}, UserEmpty
	}
	user, ok := mapUser(row.UserID, opts.UserMap)
	if !ok {
		return idempotency.Record{}, UserNotMapped
	}
	if collisions[userKey{user, key}] {
		return idempotency.Record{}, KeyCaseCollision
	}
	status, ok := row.StatusCode.(int64)
	if !ok || status < 100 || status > 599 {
		return idempotency.Record{}, StatusOutOfRange
	}
	hash, ok := row.PayloadHash.(string)
	if _, err := hex.DecodeString(hash); !ok || len(hash) != 64 || err != nil {
		return idempotency.Record{}, HashNotHex
	}
	body, ok := row.ResponseBody.(string)
	if !ok || !json.Valid([]byte(body)) {
		return idempotency.Record{}, BodyNotJSON
	}
	createdText, _ := row.CreatedAt.(string)
	created, err := time.Parse(time.RFC3339Nano, createdText)
	if err != nil {
		return idempotency.Record{}, CreatedAtBad
	}
	created = created.UTC()
	return idempotency.Record{
		UserID: user, Key: key,
		// Hexadecimal is one number in either case; the service writes
		// and compares lowercase.
		PayloadHash: strings.ToLower(hash), HashScheme: idempotency.HashSchemeD1JS,
		StatusCode: int(status), ResponseBody: []byte(body),
		Method: opts.Method, Route: opts.Route,
		CreatedAt: created, ExpiresAt: created.Add(opts.Retention),
	}, ""
}

// parseKey is the key as the service reads the Idempotency-Key header
// that carried it (idempotency.ParseKey: blanks and quotes around it
// dropped, lowercase), or false if the service would refuse it.
func parseKey(v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	key, err := idempotency.ParseKey([]string{s})
	return key, err == nil
}

// mapUser is the user id a row's record is stored under.
func mapUser(v any, userMap map[string]string) (string, bool) {
	s, ok := v.(string)
	if !ok || s == "" {
		return "", false
	}
	if userMap == nil {
		return s, true
	}
	mapped, ok := userMap[s]
	return mapped, ok
}

// keyPrefix is the first 8 characters of a row's key, as exported: enough
// to find the row, not enough to replay it.
func keyPrefix(v any) string {
	var s string
	switch k := v.(type) {
	case string:
		s = k
	case []byte:
		s = string(k)
	default:
		return fmt.Sprintf("(%T)", v)
	}
	r := []rune(s)
	if len(r) > 8 {
		r = r[:8]
	}
	return fmt.Sprintf("%q", string(r))
}
