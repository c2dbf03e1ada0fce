package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sync-events/sync-events/errcode"
)

// Request is a mutation as the flow sees it: who sent it, under which key,
// on which method and route, and the canonical form of its body.
type Request struct {
	UserID        string
	Key           string
	Method        string
	Route         string
	CanonicalBody []byte
}

// Response is a status code and a serialized JSON body.
type Response struct {
	StatusCode int
	Body       []byte
}

// Execution is what an executor decides, without writing anything: the
// answer, and the business writes that must commit with it.
type Execution[W any] struct {
	Response
	Writes []W
}

// Executor computes a mutation. It is called at most once per request, and
// only when the key is not known to this environment's replay cache; what
// it answers, 2xx or a 4xx it decides from stored state, is recorded with
// its writes. Requests refused before execution (bad key, bad body) never
// reach it and are never recorded.
type Executor[W any] func(ctx context.Context, now time.Time) (Execution[W], error)

// Outcome says how the flow answered; it is what the logs report.
type Outcome string

const (
	Executed          Outcome = "executed"           // writes and record committed
	Replayed          Outcome = "replayed"           // known key, same request
	KeyReused         Outcome = "key_reused"         // known key, other body, method or route; no Response
	WriteRejected     Outcome = "write_rejected"     // a business write's condition failed; no Response, nothing recorded
	ConflictExhausted Outcome = "conflict_exhausted" // still conflicting after every retry
)

// Outcomes lists every Outcome.
var Outcomes = []Outcome{Executed, Replayed, KeyReused, WriteRejected, ConflictExhausted}

// Result is how the flow answered. Response is set for Executed and
// Replayed; for KeyReused and WriteRejected the caller words the answer,
// from Refusals for WriteRejected: the business writes whose condition
// failed.
type Result struct {
	Response
	Summary
	Refusals []Refusal
}

// Summary is how the flow came to its answer, with nothing of the request
// or the answer in it: what a log line or a metric reports. The envelope's
// report (mutation.Report) carries it on as it is.
type Summary struct {
	Outcome Outcome
	// FromCache is set when a Replayed or KeyReused answer came from the
	// replay cache, with no DynamoDB call.
	FromCache bool
	// ConflictRetries is how many times the transaction was tried again
	// after a conflict with a concurrent one.
	ConflictRetries int
}

// Replayed reports whether the answer is a stored one.
func (r Result) Replayed() bool { return r.Outcome == Replayed }

// ErrBusy reports that concurrent transactions on the same items (another
// request with the same key, or other writes to the same stream or item)
// kept the commit from going through on every attempt. Each attempt was
// cancelled, so nothing was stored; the client should retry with the same
// key.
var ErrBusy = &errcode.Error{Code: errcode.ServiceUnavailable, Message: "Concurrent changes to the same data kept this request from being stored; nothing was stored, retry with the same Idempotency-Key"}

// DefaultRetention is how long a record answers retries unless Options say
// otherwise: long enough for a device that was offline for days.
const DefaultRetention = 7 * 24 * time.Hour

// Options tune a Flow; the zero value is a flow with DefaultRetention, no
// replay cache and the system clock.
type Options struct {
	// Retention is how long a record answers retries of its key. After it
	// the key is free again: a request with it runs as new.
	Retention time.Duration
	// Cache, if set, answers retries of keys this execution environment
	// committed or read, from memory, with no call to the store.
	Cache *ReplayCache
	// Now is the clock; nil is time.Now. Tests use it to step over expiry.
	Now func() time.Time
}

// Flow runs mutations whose business writes are of type W exactly once per
// (user, key). It is safe for concurrent use; build one per execution
// environment and share it, with its cache, across requests.
type Flow[W any] struct {
	store     Store[W]
	cache     *ReplayCache
	retention time.Duration
	now       func() time.Time
	// Conflict retries: attempts in all, and the wait between them.
	attempts int
	backoff  Backoff
}

// NewFlow returns a Flow over store.
func NewFlow[W any](store Store[W], opts Options) *Flow[W] {
	f := &Flow[W]{
		store:     store,
		cache:     opts.Cache,
		retention: opts.Retention,
		now:       opts.Now,
		attempts:  6,
		backoff:   Backoff{Base: 10 * time.Millisecond, Max: 200 * time.Millisecond},
	}
	if f.retention <= 0 {
		f.retention = DefaultRetention
	}
	if f.now == nil {
		f.now = time.Now
	}
	return f
}

// Do runs execute for req unless req.Key is known for req.UserID, in which
// case it answers what was answered before (or KeyReused if the request
// differs). A key this environment's replay cache holds is answered before
// execute runs, so a warm replay or reuse costs no read an executor makes.
// The common path costs one Commit.
func (f *Flow[W]) Do(ctx context.Context, req Request, execute Executor[W]) (Result, error) {
	now := f.now().UTC()
	rec := Record{
		UserID:      req.UserID,
		Key:         req.Key,
		PayloadHash: HashCanonical(req.CanonicalBody),
		Method:      req.Method,
		Route:       req.Route,
		CreatedAt:   now,
		ExpiresAt:   now.Add(f.retention),
		canonical:   req.CanonicalBody,
	}
	if known, ok := f.cache.get(rec.UserID, rec.Key, now); ok {
		res := answerKnown(rec, known)
		res.FromCache = true
		return res, nil
	}
	exec, err := execute(ctx, now)
	if err != nil {
		return Result{}, fmt.Errorf("execute mutation: %w", err)
	}
	rec.StatusCode, rec.ResponseBody = exec.StatusCode, exec.Body
	for attempt := 1; ; attempt++ {
		res, retry, err := f.commit(ctx, rec, exec)
		if !retry {
			res.ConflictRetries = attempt - 1
			return res, err
		}
		if attempt >= f.attempts {
			return Result{Summary: Summary{Outcome: ConflictExhausted, ConflictRetries: attempt - 1}}, ErrBusy
		}
		if err := f.backoff.Wait(ctx, attempt); err != nil {
			return Result{Summary: Summary{Outcome: ConflictExhausted, ConflictRetries: attempt - 1}}, fmt.Errorf("%w: %w", ErrBusy, err)
		}
	}
}

// commit makes one attempt; retry is true when it should be made again.
func (f *Flow[W]) commit(ctx context.Context, rec Record, exec Execution[W]) (res Result, retry bool, err error) {
	err = f.store.Commit(ctx, rec, exec.Writes, rec.CreatedAt)
	var exists *KeyExistsError
	var writeFailed *WriteConditionError
	switch {
	case err == nil:
		f.cache.put(rec, rec.CreatedAt)
		return Result{Response: exec.Response, Summary: Summary{Outcome: Executed}}, false, nil
	case errors.As(err, &exists):
		return f.resolveKnown(ctx, rec, exists.Existing)
	case errors.As(err, &writeFailed):
		return Result{Summary: Summary{Outcome: WriteRejected}, Refusals: writeFailed.Refusals}, false, nil
	case errors.Is(err, ErrTransactionConflict):
		return Result{}, true, nil
	default:
		return Result{}, false, fmt.Errorf("commit idempotency record: %w", err)
	}
}

// resolveKnown answers a request whose key is already recorded: a replay if
// it is the same request, the 409 otherwise.
func (f *Flow[W]) resolveKnown(ctx context.Context, rec Record, existing *Record) (Result, bool, error) {
	if existing == nil {
		got, found, err := f.store.Get(ctx, rec.UserID, rec.Key)
		if err != nil {
			return Result{}, false, fmt.Errorf("read idempotency record: %w", err)
		}
		if !found {
			// Deleted by TTL between the failed condition and the read.
			return Result{}, true, nil
		}
		existing = &got
	}
	f.cache.put(*existing, rec.CreatedAt)
	return answerKnown(rec, *existing), false, nil
}

// answerKnown is the answer to rec when existing holds its key: the stored
// answer if it is the same request, KeyReused otherwise.
func answerKnown(rec, existing Record) Result {
	if !sameRequest(rec, existing) {
		return Result{Summary: Summary{Outcome: KeyReused}}
	}
	return Result{Response: Response{StatusCode: existing.StatusCode, Body: existing.ResponseBody}, Summary: Summary{Outcome: Replayed}}
}
