// Package ddb is the service's DynamoDB plumbing: the client, built once
// per execution environment, the counting of each request's calls for its
// metrics line, and the names of the service's two tables. It knows no
// table's content: the ledger's definition and every read and write of it
// are package dynamodbstore's (dynamodbstore.Store); the events table's
// definition, its items and every write of it are package eventstore's
// (retention trims through eventstore.Table).
package ddb
