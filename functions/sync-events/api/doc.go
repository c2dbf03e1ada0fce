// Package api is the HTTP face of the sync-events function: it routes an API
// Gateway HTTP API (payload 2.0) request, authenticates the caller from the
// JWT authorizer's claims, refuses bad input before anything runs, and maps
// every outcome, error included, to a status code and a JSON body.
//
// It owns the wire contract; the exactly-once rules live in package
// idempotency, the ledger's storage in package dynamodbstore, and the
// events table's in package eventstore (retention trims it).
package api
