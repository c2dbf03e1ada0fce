// Package outbox carries out a mutation's effects beyond DynamoDB (a
// payment, an e-mail, a message, a webhook) after the mutation committed:
// a transactional outbox whose entries are the effects in the key's own
// ledger record (idempotency.Execution.Effects), committed in the same
// transaction as the record and the writes.
//
// Delivery is at least once: an [Outbox] hands each pending effect to the
// [Deliverer] of its kind with a key derived from (user, idempotency key,
// effect name), idempotency.EffectKey, which the downstream dedupes on (a
// Stripe Idempotency-Key, an SQS FIFO MessageDeduplicationId, an
// Idempotency-Key header on a webhook), so that a delivery repeated after
// a crash happens once downstream. Each outcome is recorded on the record
// (delivered; or failed, with its reason, after Options.Attempts tries),
// where it can be read. A failing effect never re-runs or re-answers the
// mutation.
//
// Deployed, the ledger table's stream feeds the outbox ([Outbox.Stream]);
// in a local server or a test, idempotency.Options.Committed hands it each
// record as it commits ([Outbox.Committed]). Either way the request's own
// path gains no DynamoDB call.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sync-events/sync-events/idempotency"
)

// Ledger is what the outbox needs of the ledger: the record, and a way to
// settle one of its effects. dynamodbstore.Store is one.
type Ledger interface {
	Get(ctx context.Context, userID, key string) (idempotency.Record, bool, error)
	// SetEffect records st as the state of the record's effect i (named
	// st.Name) if that effect is still pending, and answers
	// idempotency.ErrEffectSettled otherwise.
	SetEffect(ctx context.Context, userID, key string, i int, st idempotency.EffectState) error
}

// Delivery is one attempt at an effect, as its deliverer gets it.
type Delivery struct {
	// Key is the effect's idempotency.EffectKey: send it downstream as the
	// key that dedupes a repeated delivery.
	Key string
	// UserID is the mutation's caller.
	UserID string
	idempotency.Effect
	// Attempt counts from 1.
	Attempt int
}

// Deliverer carries out one kind of effect. An error is a failed attempt,
// tried again up to Options.Attempts; it must not have done the effect
// without the downstream's dedupe on Key.
type Deliverer func(ctx context.Context, d Delivery) error

// Options tune an Outbox; the zero value is the defaults each field names.
type Options struct {
	// Attempts is how many tries an effect gets before it is marked
	// failed; 0 is 3.
	Attempts int
	// Backoff is the wait before the second try, doubled before each
	// next one; 0 is 100 ms.
	Backoff time.Duration
	// MaxReason bounds the failure text recorded; 0 is 256 bytes.
	MaxReason int
}

// Outbox delivers the effects of committed mutations. It is safe for
// concurrent use.
type Outbox struct {
	ledger     Ledger
	deliverers map[string]Deliverer
	o          Options
	running    sync.WaitGroup
}

// New returns an Outbox over ledger with a Deliverer for each effect kind.
func New(ledger Ledger, deliverers map[string]Deliverer, o Options) *Outbox {
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.Backoff <= 0 {
		o.Backoff = 100 * time.Millisecond
	}
	if o.MaxReason <= 0 {
		o.MaxReason = 256
	}
	return &Outbox{ledger: ledger, deliverers: deliverers, o: o}
}

// Deliver carries out the pending effects of the record of (userID, key),
// in their order, each until it is delivered or has used its attempts. It
// reads the record first, so that a delivery repeated (a stream's retry,
// a crash before an outcome was recorded) skips what is settled. Its
// error is the ledger's (retry the whole delivery); an effect's failure is
// recorded on the effect, not returned.
func (o *Outbox) Deliver(ctx context.Context, userID, key string) error {
	rec, found, err := o.ledger.Get(ctx, userID, key)
	if err != nil || !found {
		return err // a record gone (expired, erased) has nothing left to do
	}
	for i, st := range rec.Effects {
		if st.Status != idempotency.EffectPending {
			continue
		}
		if err := o.deliver(ctx, rec.UserID, rec.Key, i, st); err != nil && !errors.Is(err, idempotency.ErrEffectSettled) {
			return fmt.Errorf("effect %q: %w", st.Name, err)
		}
	}
	return nil
}

// deliver tries effect i until it is delivered or out of attempts, and
// records each failure and the outcome.
func (o *Outbox) deliver(ctx context.Context, userID, key string, i int, st idempotency.EffectState) error {
	deliver, ok := o.deliverers[st.Kind]
	if !ok {
		st.Status, st.Reason = idempotency.EffectFailed, fmt.Sprintf("no deliverer for kind %q", st.Kind)
		return o.ledger.SetEffect(ctx, userID, key, i, st)
	}
	wait := o.o.Backoff
	for st.Attempts < o.o.Attempts {
		err := deliver(ctx, Delivery{Key: idempotency.EffectKey(userID, key, st.Name), UserID: userID, Effect: st.Effect, Attempt: st.Attempts + 1})
		if err == nil {
			st.Status, st.Reason = idempotency.EffectDelivered, ""
			return o.ledger.SetEffect(ctx, userID, key, i, st)
		}
		st.Attempts++
		st.Reason = o.reason(err)
		if st.Attempts >= o.o.Attempts {
			st.Status = idempotency.EffectFailed
		}
		if err := o.ledger.SetEffect(ctx, userID, key, i, st); err != nil || st.Status == idempotency.EffectFailed {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
	return nil
}

func (o *Outbox) reason(err error) string {
	r := err.Error()
	if len(r) > o.o.MaxReason {
		r = r[:o.o.MaxReason]
	}
	return r
}

// Committed delivers rec's effects in the background: it is an
// idempotency.Options.Committed for a process that has no stream of the
// ledger table (a local server, a test). A delivery that fails on the
// ledger is lost to this process; the stream, or a later Deliver, picks
// the effects up. Wait waits for what it started.
func (o *Outbox) Committed(ctx context.Context, rec idempotency.Record) {
	o.running.Add(1)
	go func() {
		defer o.running.Done()
		_ = o.Deliver(context.WithoutCancel(ctx), rec.UserID, rec.Key)
	}()
}

// Wait waits for the deliveries Committed started.
func (o *Outbox) Wait() { o.running.Wait() }
