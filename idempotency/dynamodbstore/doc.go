// Package dynamodbstore makes a service's DynamoDB writes exactly once per
// idempotency key: the writes of a request (any Put, Update, Delete or
// ConditionCheck, on any table) and the key's record in the ledger table
// commit in one TransactWriteItems, or neither does, and every retry of
// the key is answered with the first answer. A fresh mutation is one
// DynamoDB call; a replay is none when the replay cache holds the key, one
// otherwise.
//
// A service on DynamoDB writes no type parameter: [NewRunner] builds, once
// per execution environment, the [Runner] (the HTTP envelope of package
// mutation over the flow of package idempotency, over this [Store]); each
// route is a [Mutation], a function from the request to a [Plan]: the
// answer, the [Write] items to commit with it, and a Refused function that
// words a failed condition as the service's 404 or 409 from the
// idempotency.Refusal of each failed write (its index and, for a write that
// asks with ReturnValuesOnConditionCheckFailure ALL_OLD, the item as it
// stood). A consumer without HTTP (a queue's) calls [Flow].Do with an
// [Executor] instead. Tests run on package dynamotest, beside this one.
//
// The ledger table is keyed by user and key: partition key "user_id" (S),
// sort key "key" (S), time to live on "expires_at". [TableInput] and
// [TTLInput] are the requests that make it, [CreateTable] makes it with
// them, and [CloudFormation] is the same table for a SAM or CloudFormation
// template. A record holds the body's hash (payload_hash), the answer
// (status_code, response_body), created_at, and the method and route the
// key was first sent on; a record imported from another ledger also says
// how its hash was made (hash_scheme, idempotency.HashSchemeD1JS), and
// [Store.Insert] writes such a record unless its key is already there.
//
// What a failure was is said with the errors package idempotency defines
// (see [idempotency.Store]): a failed business condition is a
// *[ConditionFailedError], which also matches *idempotency.WriteConditionError
// and carries the items DynamoDB returned with it; throttling, server and
// network errors are errcode.ServiceUnavailable, to retry with the same
// key. The package reads and writes the ledger table only; the business
// tables are the caller's.
//
// The examples (ExamplePlan, ExampleFlow) are in example_test.go, which go doc
// does not print; docs/exactly-once.md is the manual.
package dynamodbstore
