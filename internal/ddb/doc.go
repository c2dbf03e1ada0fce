// Package ddb is the service's DynamoDB plumbing: the client, built once
// per execution environment, the counting of each request's calls for its
// metrics line, and the names of the service's two tables. It knows no
// table's content: each table's definition is its owner's (the ledger's in
// package dynamodbstore, the events' in package eventlog), and the tables
// themselves have one door each, dynamodbstore.Store for the ledger and
// eventlog.Log for the events.
package ddb
