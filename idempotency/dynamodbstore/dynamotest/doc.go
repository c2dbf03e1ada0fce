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
// execution environment (see docs/exactly-once.md for the whole file):
//
//	b := dynamotest.Start(t)
//	ledger := b.LedgerTable(t)
//	notes := b.CreateTable(t, notesTable("notes"), nil)
//	// Every attempt the SDK makes is applied, and its answer lost.
//	b.Transport.LoseAnswers("TransactWriteItems", 3)
//	first := newService(b.Client, notes, ledger).Handle(ctx, patch(key, body))
//	// 503: "... may have been stored; retrying with the same Idempotency-Key is safe"
//	b.Transport.Reset()
//	again := newService(b.Client, notes, ledger).Handle(ctx, patch(key, body))
//	// 200, Idempotent-Replayed: true, the body of the one commit
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
