package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Effect is something a mutation does beyond its DynamoDB writes: a call
// to a payment API, an e-mail, a message to a queue, a webhook. It is
// declared in the Execution, committed in the key's record with the
// writes (all or nothing), and carried out after the commit, at least
// once, by package outbox, under a key derived from (user, idempotency
// key, Name) that the downstream dedupes on. It never runs for a request
// that did not commit, and never re-runs or re-answers the mutation.
type Effect struct {
	// Name tells the mutation's effects apart ("charge", "receipt"); the
	// derived key is made from it, so it must be the same on every
	// attempt of the mutation.
	Name string
	// Kind says which deliverer carries it out ("webhook", "email").
	Kind string
	// Payload is what the deliverer is handed, as the mutation wrote it.
	Payload []byte
}

// EffectStatus is where an effect stands.
type EffectStatus string

const (
	EffectPending   EffectStatus = "pending"   // committed, not yet delivered
	EffectDelivered EffectStatus = "delivered" // the deliverer succeeded
	EffectFailed    EffectStatus = "failed"    // every attempt failed; Reason says why
)

// EffectState is an effect as the record keeps it: what was declared, and
// how its delivery went.
type EffectState struct {
	Effect
	Status EffectStatus
	// Attempts is how many times delivery was tried and failed.
	Attempts int
	// Reason is the last failure, for an operator; empty once delivered.
	Reason string
}

// EffectKey is the key a downstream dedupes an effect on: the SHA-256 of
// the caller, the idempotency key and the effect's name, in hex (64
// characters: an Idempotency-Key for Stripe, an SQS FIFO
// MessageDeduplicationId). Every attempt of the mutation, and every
// delivery of the effect, carries the same one; no two effects share it.
func EffectKey(userID, key, name string) string {
	h := sha256.New()
	for _, part := range []string{userID, key, name} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ErrEffectSettled reports that an effect is no longer pending: another
// delivery settled it first.
var ErrEffectSettled = errors.New("the effect is no longer pending")

// errEffects reports effects a mutation declared wrongly: a bug in it.
var errEffects = errors.New("invalid effects")

// pendingEffects are effects as a new record holds them, each checked: a
// name and a kind, no name twice.
func pendingEffects(effects []Effect) ([]EffectState, error) {
	if len(effects) == 0 {
		return nil, nil
	}
	out := make([]EffectState, len(effects))
	seen := make(map[string]bool, len(effects))
	for i, e := range effects {
		switch {
		case e.Name == "" || e.Kind == "":
			return nil, fmt.Errorf("%w: effect %d has no name or no kind", errEffects, i)
		case seen[e.Name]:
			return nil, fmt.Errorf("%w: two effects are named %q", errEffects, e.Name)
		}
		seen[e.Name] = true
		out[i] = EffectState{Effect: e, Status: EffectPending}
	}
	return out, nil
}
