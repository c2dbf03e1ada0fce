// Package api is the HTTP face of the sync-events function: it routes an API
// Gateway HTTP API (payload 2.0) request, authenticates the caller from the
// JWT authorizer's claims, refuses bad input before anything runs, and maps
// every outcome, error included, to a status code and a JSON body.
//
// It owns the wire contract; the exactly-once rules live in package
// idempotency and the storage in package ddb.
package api
