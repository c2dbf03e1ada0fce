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
	// Effects are carried out after the commit, at least once each, under
	// keys the downstream dedupes on (see Effect and package outbox). They
	// are stored in the key's record: they count towards its item's size.
	Effects []Effect
}

// Executor computes a mutation. It is called at most once per request, and
// only when the key is not known to this environment's replay cache; what
// it answers, 2xx or a 4xx it decides from stored state, is recorded with
// its writes. Requests refused before execution (bad key, bad body) never
// reach it and are never recorded.
//
// An error it returns records nothing, but is answered only if the key
// has no record: a key recorded before (by an attempt whose answer was
// lost, in another environment) is answered from its record, whatever the
// executor says now. Once a key has a record, its answer is the answer.
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
var Outcomes = []Outcome{Executed, Replayed, KeyReused, WriteRejected, ConflictExhausted, InProgress}

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
	// Committed, if set, is handed each record committed with effects,
	// once its transaction succeeded: for delivering them in the process
	// (outbox.Outbox.Committed) where no stream of the ledger table does.
	// It must not block the answer.
	Committed func(ctx context.Context, rec Record)
	// Lease bounds how long an execution with steps holds its key where
	// the context has no deadline (a Lambda's context has one: its
	// remaining time); 0 is DefaultLease.
	Lease time.Duration
}

// Flow runs mutations whose business writes are of type W exactly once per
// (user, key). It is safe for concurrent use; build one per execution
// environment and share it, with its cache, across requests.
type Flow[W any] struct {
	store     Store[W]
	cache     *ReplayCache
	retention time.Duration
	now       func() time.Time
	committed func(ctx context.Context, rec Record)
	lease     time.Duration
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
		committed: opts.Committed,
		lease:     opts.Lease,
		attempts:  6,
		backoff:   Backoff{Base: 10 * time.Millisecond, Max: 200 * time.Millisecond},
	}
	if f.retention <= 0 {
		f.retention = DefaultRetention
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.lease <= 0 {
		f.lease = DefaultLease
	}
	return f
}

// Do runs execute for req unless req.Key is known for req.UserID, in which
// case it answers what was answered before (or KeyReused if the request
// differs). A key this environment's replay cache holds is answered before
// execute runs, so a warm replay or reuse costs no read an executor makes.
// The common path costs one Commit.
//
// The stored answer wins: where execute fails, Do reads the key's record
// (one Get) and answers from it if there is one, so that a refusal the
// code would give now (an item already deleted, a rule tightened since)
// never answers a retry of a mutation that was stored. Only where the key
// has no record does execute's error come back, wrapped. A failed write
// condition needs no read: the record's own condition is in the same
// transaction, and a store reports a *KeyExistsError before any refused
// write.
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
	steps := newStepper(f, ctx, rec)
	exec, err := execute(context.WithValue(ctx, stepperKey{}, steps), now)
	if err != nil {
		return f.failed(ctx, rec, steps, err)
	}
	rec.Lease = steps.held()
	rec.StatusCode, rec.ResponseBody = exec.StatusCode, exec.Body
	if rec.Effects, err = pendingEffects(exec.Effects); err != nil {
		steps.release(ctx)
		return Result{}, err
	}
	res, err := f.commitRetrying(ctx, rec, exec)
	if err != nil || res.Outcome == WriteRejected {
		// Nothing recorded: a retry need not wait for this lease to pass.
		steps.release(ctx)
	}
	return res, err
}

// commitRetrying commits rec and exec, again after each conflict with a
// concurrent transaction, up to the flow's attempts.
func (f *Flow[W]) commitRetrying(ctx context.Context, rec Record, exec Execution[W]) (Result, error) {
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
	var held *InProgressError
	var writeFailed *WriteConditionError
	switch {
	case err == nil:
		f.cache.put(rec, rec.CreatedAt)
		if len(rec.Effects) > 0 && f.committed != nil {
			f.committed(ctx, rec)
		}
		return Result{Response: exec.Response, Summary: Summary{Outcome: Executed}}, false, nil
	case errors.As(err, &exists):
		return f.resolveKnown(ctx, rec, exists.Existing)
	case errors.As(err, &held):
		res, err := inProgress(rec, held, f.now())
		return res, false, err
	case errors.As(err, &writeFailed):
		return Result{Summary: Summary{Outcome: WriteRejected}, Refusals: writeFailed.Refusals}, false, nil
	case errors.Is(err, ErrTransactionConflict):
		return Result{}, true, nil
	default:
		return Result{}, false, fmt.Errorf("commit idempotency record: %w", err)
	}
}

// failed answers a request whose executor failed with err: where a step
// found the key taken, as its holder says; otherwise as refuse does, once
// the execution's lease (if it took one) is released.
func (f *Flow[W]) failed(ctx context.Context, rec Record, steps *stepper, err error) (Result, error) {
	var taken *leaseTaken
	if !errors.As(err, &taken) {
		steps.release(ctx)
		return f.refuse(ctx, rec, fmt.Errorf("execute mutation: %w", err))
	}
	var exists *KeyExistsError
	var held *InProgressError
	switch {
	case errors.As(taken.err, &exists):
		res, gone, err := f.resolveKnown(ctx, rec, exists.Existing)
		if gone { // the record expired between the lease's Put and the read
			return Result{}, ErrBusy
		}
		return res, err
	case errors.As(taken.err, &held):
		return inProgress(rec, held, f.now())
	}
	return Result{}, fmt.Errorf("take the key's lease: %w", taken.err)
}

// refuse answers a request whose executor failed with err: from the key's
// record if it has a live one, with err otherwise. Where the record cannot
// be read, the answer is the read's failure, which the client retries:
// err may be a refusal that the record would have overruled.
func (f *Flow[W]) refuse(ctx context.Context, rec Record, err error) (Result, error) {
	existing, found, getErr := f.store.Get(ctx, rec.UserID, rec.Key)
	switch {
	case getErr != nil:
		return Result{}, fmt.Errorf("read idempotency record after the mutation was refused (%v): %w", err, getErr)
	case !found || !existing.ExpiresAt.After(rec.CreatedAt):
		return Result{}, err
	}
	f.cache.put(existing, rec.CreatedAt)
	return answerKnown(rec, existing), nil
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
	if !rec.SameRequest(existing) {
		return Result{Summary: Summary{Outcome: KeyReused}}
	}
	return Result{Response: Response{StatusCode: existing.StatusCode, Body: existing.ResponseBody}, Summary: Summary{Outcome: Replayed}}
}
