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
	// is a bug or a misconfiguration.
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

// WriteConditionError reports that the conditions of the business writes
// at Indexes (into the writes handed to Commit) failed, so the transaction
// wrote nothing. A backend may report only the first that failed.
type WriteConditionError struct {
	Indexes []int
}

func (e *WriteConditionError) Error() string {
	return fmt.Sprintf("business write condition failed (writes %v)", e.Indexes)
}

// ErrTransactionConflict reports a transaction cancelled because another one
// touched the same items at the same time; trying again resolves it.
var ErrTransactionConflict = errors.New("transaction conflict")

// ErrTooLarge reports a mutation over the store's transaction limits (on
// DynamoDB: 100 actions, 4 MB in all, 400 KB an item). Nothing was sent,
// and sending it again cannot help. A store wraps it with the limit that
// was passed, for the logs.
var ErrTooLarge = &errcode.Error{Code: errcode.PayloadTooLarge, Message: "The mutation exceeds the store's transaction limits; nothing was stored"}
