// Package dynamotest is the test kit of a service built on package
// dynamodbstore: a DynamoDB for its tests, in the test's own process, and
// a transport that fails calls the way a network or DynamoDB does, so that
// a team can hold its own mutations to exactly-once.
//
// [Start] hands a test a [Backend]: a DynamoDB client on an in-memory
// DynamoDB-compatible server (kumo's emulator, [Embedded], one per test
// binary), or on the endpoint DYNAMODB_ENDPOINT names, so that the same
// tests run on another implementation (moto, dynoxide) in CI;
// DYNAMODB_BACKEND names that implementation in Backend.Name. Tables made
// with [Backend.CreateTable] or [Backend.LedgerTable] have names of their
// own and are deleted when the test ends, so tests may run side by side
// on one server.
//
// Every call of the client goes through the Backend's [Transport], which
// counts calls by operation ([Transport.Calls]) and injects a [Fault]:
// [Transport.LoseAnswers] lets DynamoDB apply a call and then drops its
// answer, as a reset connection or a timeout does ([Fault.After] picks
// the Nth call); [Transport.Throttle] answers ThrottlingException without
// applying anything; other kinds refuse a connection, stall an answer, cut
// a page short or take the items out of a failed transaction's reasons.
//
// A mutation's first test, with a lost answer retried from a fresh
// execution environment. patchTask is the service's dynamodbstore.Mutation
// and tasksTable its table's CreateTableInput; req is the PATCH as API
// Gateway sends it (kit_test.go, beside this file, is the whole test with
// them):
//
//	b := dynamotest.Start(t)
//	ledger, tasks := b.LedgerTable(t), b.CreateTable(t, tasksTable, nil)
//	handler := func() mutation.HTTPAPIHandler { // a fresh runner: a fresh environment
//		runner := dynamodbstore.NewRunner(b.Client, ledger, idempotency.Options{}, mutation.Options{})
//		return runner.HTTPAPI(patchTask(tasks), nil)
//	}
//	b.Transport.LoseAnswers("TransactWriteItems", 3) // every SDK attempt applied, its answer lost
//	first, _ := handler()(ctx, req)
//	// first: 503 "... the change may have been stored: retrying with the same Idempotency-Key is safe"
//	b.Transport.Reset()
//	again, _ := handler()(ctx, req)
//	// again: 200, Idempotent-Replayed: true, the answer of the one commit
//
// The kit links kumo, which a Lambda binary must not carry (megabytes and
// start-up time): import it from _test.go files only. A test of
// sync-events' own holds that its functions' dependency lists leave it
// out; a team's build can do the same with go list -deps.
//
// The kit's own tests (kit_test.go) are a mutation's whole first test file,
// and ExampleTransport_LoseAnswers (example_test.go, which go doc does not
// print) wires the transport without a test.
package dynamotest
