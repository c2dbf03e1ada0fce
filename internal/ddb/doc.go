// Package ddb is the service's DynamoDB layer: the client, the one
// definition of each table (keys, index, TTL attribute) that the code, the
// tests and template.yaml share, the transaction that commits a mutation
// with its ledger record, and the events queries.
//
// It implements idempotency.Store and knows nothing of HTTP. It does not
// decide what a mutation writes; callers hand it the writes.
package ddb
