// Package idempotency owns the rules that make a mutation exactly-once: what
// a valid Idempotency-Key is, how a request body is hashed (SHA-256 of its
// RFC 8785 canonical form), and the flow that commits a mutation's writes
// together with its ledger record, or replays the recorded answer.
//
// It does not talk to DynamoDB itself and knows nothing of HTTP routing: it
// declares the small [Store] interface it needs, which package ddb
// implements, and it receives already-authenticated user ids from its caller.
package idempotency
