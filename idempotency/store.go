package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sync-events/sync-events/errcode"
)

// Record is one entry of the idempotency ledger: the answer given to the
// first request that carried Key for UserID.
type Record struct {
	UserID       string
	Key          string
	PayloadHash  string
	StatusCode   int
	ResponseBody []byte
	Method       string
	Route        string
	CreatedAt    time.Time
	ExpiresAt    time.Time
	// Effects are the mutation's effects and how their delivery stands;
	// none for most mutations.
	Effects []EffectState
	// Lease, on a record being committed, is the owner of the key's lease
	// the execution took to run steps: the record replaces that lease's
	// item. Empty for a mutation without steps.
	Lease string
	// HashScheme says how PayloadHash was made: "" for the SHA-256 of the
	// body's RFC 8785 canonical form, as every record the flow writes;
	// HashSchemeD1JS for a record imported from the Workers + D1 service.
	// A retry is held to the digest its record's scheme makes.
	HashScheme string

	// canonical is the request's canonical body, on the record the flow
	// makes of a request (never stored or cached): what a digest of
	// another scheme is made from.
	canonical []byte
}

// SameRequest reports whether r, a request's record, asks what existing
// recorded: the same method and route, and a body whose digest, made as
// existing's was (its HashScheme), is existing's. A key sent again with
// another request is a reused key. A scheme this version does not know
// matches nothing: such a key is answered as reused, never run again.
func (r Record) SameRequest(existing Record) bool {
	if existing.Method != r.Method || existing.Route != r.Route {
		return false
	}
	switch existing.HashScheme {
	case "":
		return existing.PayloadHash == r.PayloadHash
	case HashSchemeD1JS:
		js, err := d1jsForm(r.canonical)
		return err == nil && HashCanonical(js) == existing.PayloadHash
	}
	return false
}

// Store is what the flow needs from the database, for business writes of
// type W. Package dynamodbstore implements it on DynamoDB, for writes of
// any item of any table.
type Store[W any] interface {
	// Commit writes rec and writes in one all-or-nothing transaction. rec is
	// written only if no live record exists for (rec.UserID, rec.Key): one
	// whose ExpiresAt is before now counts as gone, because TTL deletes late.
	//
	// Its errors say what happened, so that the flow and whoever answers
	// the client can act on them without knowing the database: a
	// *KeyExistsError, an error matching *WriteConditionError, an error
	// wrapping ErrTransactionConflict or ErrTooLarge, or, for an
	// infrastructure failure that a later identical request can get past
	// (throttling, a timeout, a server or network error), an
	// *errcode.Error with code errcode.ServiceUnavailable. Any other error
	// is a bug or a misconfiguration. Where the transaction was sent and
	// no answer said whether it was applied (an answer lost, a timeout, a
	// server error), the error also wraps ErrOutcomeUnknown, so that the
	// client is not told that nothing was stored.
	Commit(ctx context.Context, rec Record, writes []W, now time.Time) error
	// Get reads a record with strong consistency; found is false if absent.
	Get(ctx context.Context, userID, key string) (rec Record, found bool, err error)
}

// KeyExistsError reports that the ledger already holds a record for the key.
// Existing is that record when the backend returned it with the failed
// condition (DynamoDB does), nil when the caller has to read it.
type KeyExistsError struct {
	Existing *Record
}

func (e *KeyExistsError) Error() string { return "idempotency record already exists" }

// WriteConditionError reports that the conditions of business writes
// failed, so the transaction wrote nothing: one Refusal each. A backend may
// report only the first that failed.
type WriteConditionError struct {
	Refusals []Refusal
}

// Refusal is one business write whose condition failed, and what the store
// knows of the item the condition was held against: what tells a mutation
// a missing item (404) from one in another state (409).
type Refusal struct {
	// Index is the write's, into the writes handed to Commit
	// (Execution.Writes).
	Index int
	// Found reports that the item stood when the condition failed. It is
	// set only where the store knows (package dynamodbstore: for a write
	// that asks for the item with ReturnValuesOnConditionCheckFailure
	// ALL_OLD); false otherwise.
	Found bool
	// Item is that item, in the store's own form (package dynamodbstore:
	// a map[string]types.AttributeValue); nil where Found is false.
	Item any
}

// RefusedAt is a WriteConditionError of the writes at indexes, with no
// item known.
func RefusedAt(indexes ...int) *WriteConditionError {
	e := &WriteConditionError{Refusals: make([]Refusal, len(indexes))}
	for i, ix := range indexes {
		e.Refusals[i].Index = ix
	}
	return e
}

// Indexes are the refused writes' indexes.
func (e *WriteConditionError) Indexes() []int {
	out := make([]int, len(e.Refusals))
	for i, r := range e.Refusals {
		out[i] = r.Index
	}
	return out
}

func (e *WriteConditionError) Error() string {
	return fmt.Sprintf("business write condition failed (writes %v)", e.Indexes())
}

// ErrOutcomeUnknown marks a failure after which the mutation's writes may
// have been committed: the transaction was sent, and no answer said
// whether it was applied (the answer was lost, the call timed out, the
// server failed). The client is told so, and that a retry with the same
// key is safe: the retry is answered from the record if the commit was
// applied, and runs afresh if it was not.
var ErrOutcomeUnknown = errors.New("the commit was sent and its outcome is unknown")

// ErrTransactionConflict reports a transaction cancelled because another one
// touched the same items at the same time; trying again resolves it.
var ErrTransactionConflict = errors.New("transaction conflict")

// ErrTooLarge reports a mutation over the store's transaction limits (on
// DynamoDB: 100 actions, 4 MB in all, 400 KB an item). Nothing was sent,
// and sending it again cannot help. A store wraps it with the limit that
// was passed, for the logs.
var ErrTooLarge = &errcode.Error{Code: errcode.PayloadTooLarge, Message: "The mutation exceeds the store's transaction limits; nothing was stored"}
