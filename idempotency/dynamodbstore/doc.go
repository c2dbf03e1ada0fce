// Package dynamodbstore is the idempotency ledger on DynamoDB: an
// [idempotency.Store] whose business writes are any
// [types.TransactWriteItem] (Put, Update, Delete or ConditionCheck, on any
// table), committed together with the key's record in one
// TransactWriteItems. A fresh mutation is one call; a replay is none when
// the flow's replay cache holds the key, one otherwise.
//
// The ledger table is keyed by user and key: partition key "user_id" (S),
// sort key "key" (S), time to live on "expires_at". [TableInput] and
// [TTLInput] are the requests that make it, [CreateTable] makes it with
// them, and [CloudFormation] is the same table for a SAM or CloudFormation
// template. Each record holds what the seed's idempotency_ledger holds:
// payload_hash, status_code, response_body, created_at, method, route.
//
// What a failure was is said with the errors package idempotency defines
// (see [idempotency.Store]): a failed business condition is a
// *[ConditionFailedError], which also matches *idempotency.WriteConditionError
// and carries the items DynamoDB returned with it; throttling, server and
// network errors are errcode.ServiceUnavailable, to retry with the same
// key. The package reads and writes the ledger table only; the business
// tables are the caller's.
package dynamodbstore
