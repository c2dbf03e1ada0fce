// Package embedded is the backend of the local tools (make run, make
// invoke) and the service's tests: the test kit's in-memory
// DynamoDB-compatible server (package dynamotest, kumo's emulator) unless
// an endpoint is given, with the service's tables made from the one
// definition of each. It is never imported by a Lambda binary: a test of
// the functions' dependency lists holds that.
package embedded

import "github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"

// Name names the embedded implementation in logs and test output.
const Name = dynamotest.Embedded
