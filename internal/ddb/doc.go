// Package ddb is the service's DynamoDB layer: the client, the one
// definition of each table (keys, index, TTL attribute) that the code, the
// tests and template.yaml share, the transaction that commits a mutation's
// writes with its ledger record (Ledger), the events with each user's head,
// which gives every event its position in commit order (EventLog), and the
// events queries.
//
// Ledger and EventLog implement idempotency.Store; the package knows
// nothing of HTTP and does not decide what a mutation writes: callers hand
// it the writes.
package ddb
