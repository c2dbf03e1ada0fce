package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sync-events/sync-events/errcode"
)

// A step is an outside call whose result the answer needs (charge a card,
// answer with the charge's id): a recovery point in Stripe's sense. The
// first Step of an execution takes a lease on the key, which a concurrent
// duplicate meets as ErrInProgress; each step's result is recorded before
// the mutation goes on, so that a retry after a crash resumes after the
// last recorded step, and a step cut off mid-call runs again with the same
// derived key, for the downstream to dedupe. A mutation without steps
// takes no lease and costs what it did.

// LeaseStore is what a Store adds for mutations with steps
// (dynamodbstore.Store is one). A Store without it runs mutations that
// call no Step.
type LeaseStore interface {
	// Lease takes (rec.UserID, rec.Key) for owner until until, where no
	// record stands and no live lease: a fresh key, or one whose lease
	// passed (whose recorded steps it returns). A key with its record is a
	// *KeyExistsError; one leased by another until later, an
	// *InProgressError.
	Lease(ctx context.Context, rec Record, owner string, until, now time.Time) (steps map[string][]byte, err error)
	// SaveStep records a step's result, if owner still holds the lease;
	// otherwise an *InProgressError.
	SaveStep(ctx context.Context, userID, key, owner, name string, result []byte) error
	// Release ends owner's lease early, keeping the recorded steps: for
	// an execution that failed, so that the client's retry need not wait.
	Release(ctx context.Context, userID, key, owner string) error
}

// InProgressError reports a key another execution holds a lease on,
// running its steps, until Until. Existing is the request it holds it for.
type InProgressError struct {
	Existing Record
	Until    time.Time
}

func (e *InProgressError) Error() string { return "idempotency key in progress" }

// ErrInProgress is the answer to a request whose key another execution of
// the same request holds: 409, with Retry-After until its lease ends (the
// IETF Idempotency-Key draft's answer to a request still being processed).
var ErrInProgress = &errcode.Error{Code: errcode.KeyInProgress, Message: "A request with this Idempotency-Key is still being processed; retry after the time in Retry-After"}

// InProgress is the Outcome of a request refused with ErrInProgress.
const InProgress Outcome = "in_progress"

// DefaultLease is how long a lease lasts when the context has no deadline
// (a Lambda's has: its remaining time).
const DefaultLease = time.Minute

// StepFunc calls outside once. key is the step's idempotency.EffectKey
// (caller, key, "step:"+name): send it downstream, so that a call repeated
// after a crash is deduped there. Its result is what Step returns, and is
// recorded (a few KB at most: it is stored in the ledger).
type StepFunc func(ctx context.Context, key string) ([]byte, error)

// Step runs fn as the step called name of the executor whose context is
// ctx, once for the key: where an earlier attempt recorded its result,
// that result, without calling fn. The first Step of an execution takes
// the key's lease (one call); each result is recorded before Step returns
// (one call). An error of fn is returned as it is, and nothing recorded.
// Called outside an executor run by Flow.Do, or over a Store without
// leases, it fails.
func Step(ctx context.Context, name string, fn StepFunc) ([]byte, error) {
	s, ok := ctx.Value(stepperKey{}).(*stepper)
	if !ok || s.store == nil {
		return nil, errNoSteps
	}
	return s.step(ctx, name, fn)
}

var errNoSteps = errors.New("idempotency.Step: not in an executor of a Flow whose Store is a LeaseStore")

type stepperKey struct{}

// stepper is one execution's steps: its lease and what is recorded.
type stepper struct {
	store LeaseStore
	rec   Record
	now   time.Time
	until time.Time
	mu    sync.Mutex
	owner string            // set once the lease is taken
	steps map[string][]byte // recorded results, by name
}

func newStepper[W any](f *Flow[W], ctx context.Context, rec Record) *stepper {
	s := &stepper{rec: rec, now: rec.CreatedAt, until: rec.CreatedAt.Add(f.lease)}
	s.store, _ = f.store.(LeaseStore)
	if d, ok := ctx.Deadline(); ok && d.Before(s.until) {
		s.until = d
	}
	return s
}

// leaseTaken wraps what Lease refused, for Do to answer.
type leaseTaken struct{ err error }

func (e *leaseTaken) Error() string { return "lease: " + e.err.Error() }
func (e *leaseTaken) Unwrap() error { return e.err }

func (s *stepper) step(ctx context.Context, name string, fn StepFunc) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owner == "" {
		owner := newOwner()
		steps, err := s.store.Lease(ctx, s.rec, owner, s.until, s.now)
		if err != nil {
			return nil, &leaseTaken{err}
		}
		s.owner, s.steps = owner, steps
	}
	if r, ok := s.steps[name]; ok {
		return r, nil
	}
	result, err := fn(ctx, EffectKey(s.rec.UserID, s.rec.Key, "step:"+name))
	if err != nil {
		return nil, err
	}
	if err := s.store.SaveStep(ctx, s.rec.UserID, s.rec.Key, s.owner, name, result); err != nil {
		return nil, &leaseTaken{err}
	}
	if s.steps == nil {
		s.steps = map[string][]byte{}
	}
	s.steps[name] = result
	return result, nil
}

// held is the lease's owner, empty where no step ran.
func (s *stepper) held() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner
}

// release ends a lease held by an execution that failed, so that a retry
// need not wait for it to pass; best effort, as the lease passes anyway.
func (s *stepper) release(ctx context.Context) {
	if owner := s.held(); owner != "" {
		_ = s.store.Release(context.WithoutCancel(ctx), s.rec.UserID, s.rec.Key, owner)
	}
}

func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// inProgress is the answer to rec when another execution holds its key:
// KeyReused for another request, ErrInProgress with the lease's end for
// the same one.
func inProgress(rec Record, e *InProgressError, now time.Time) (Result, error) {
	if !rec.SameRequest(e.Existing) {
		return Result{Summary: Summary{Outcome: KeyReused}}, nil
	}
	wait := e.Until.Sub(now)
	if wait < time.Second {
		wait = time.Second
	}
	return Result{Summary: Summary{Outcome: InProgress}}, &errcode.Error{Code: ErrInProgress.Code, Message: ErrInProgress.Message, RetryAfter: wait, Err: fmt.Errorf("leased until %s", e.Until.Format(time.RFC3339Nano))}
}
