package ddbtest

import "github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"

// The fault transport is the public test kit's (package dynamotest), so
// that what teams test their mutations with is what this project's own
// tests hold true; these names keep the project's tests short.
type (
	Transport = dynamotest.Transport
	Fault     = dynamotest.Fault
	FaultKind = dynamotest.FaultKind
)

// The fault kinds, as dynamotest defines them.
const (
	Refused       = dynamotest.Refused
	LostAnswer    = dynamotest.LostAnswer
	ServiceError  = dynamotest.ServiceError
	StalledAnswer = dynamotest.StalledAnswer
	ShortPage     = dynamotest.ShortPage
	Delayed       = dynamotest.Delayed
	NoOldItems    = dynamotest.NoOldItems
)
