// Package idempotency is the core of exactly-once mutations: what a valid
// Idempotency-Key is, how a request body is fingerprinted (SHA-256 of its
// RFC 8785 canonical form), and the [Flow] that commits a mutation's
// writes together with the key's ledger record in one transaction, or
// answers a retry with the recorded answer.
//
// A service on DynamoDB does not start here: package dynamodbstore is this
// flow over DynamoDB with no type parameter to write, package mutation its
// HTTP envelope, and package batch its consumer of SQS, Kinesis and
// DynamoDB stream batches. This package is for what they do not cover: a
// store of another database (implement [Store], two methods; W is that
// database's write type) or the flow called directly, from another
// trigger.
//
// [Flow.Do] takes a [Request] (user, key, method, route, canonical body)
// and an [Executor], and returns a [Result] whose Outcome says what
// happened: [Executed] (the executor ran; its writes and the record
// committed together), [Replayed] (the key was known with the same
// request; the first answer, byte for byte), [KeyReused] (the key was known
// with another request; nothing ran), [WriteRejected] (a condition of the
// executor's writes failed; nothing was written or recorded, and Refusals
// say which), or [ConflictExhausted]. An error is the store's failure:
// retryable with the same key, and, where it wraps [ErrOutcomeUnknown],
// one after which the writes may have been committed. Once a key has a
// record, that record answers its retries, whatever the executor would
// say now.
//
// Beyond the writes: an Execution's [Effect]s commit in the record and are
// carried out after it by package outbox, under [EffectKey]; a [Step] is
// an outside call whose result the answer needs, recorded before the
// mutation goes on, under a lease a duplicate meets as [ErrInProgress].
//
// It does not talk to a database itself and knows no HTTP: callers hand it
// already-authenticated user ids. The examples are in example_test.go,
// which go doc does not print.
package idempotency
