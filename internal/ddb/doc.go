// Package ddb is the service's DynamoDB plumbing: the client, built once
// per execution environment, the counting of each request's calls for its
// metrics line, and the creation of the tables on local and test backends
// from the one definition of each (the ledger's in package dynamodbstore,
// the events' in package eventlog).
//
// The tables themselves have one door each: dynamodbstore.Store for the
// ledger, eventlog.Log for the events.
package ddb
