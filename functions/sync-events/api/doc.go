// Package api is the sync-events API as an http.Handler: its route table
// (an http.ServeMux of "METHOD pattern" routes, behind the API's own 404
// and 405), the caller the edge put in the context (package edge),
// refusals of bad input before anything runs, the mutations through the
// one envelope of package mutation, the GET pages, and the one table that
// maps every outcome, error included, to a status and a JSON body. The
// Lambda serves it through Handle (API Gateway's event converted once);
// make run serves it directly.
//
// It owns the wire contract; the exactly-once rules live in package
// idempotency, the ledger's storage in package dynamodbstore, and the
// events table's in package eventstore (retention trims it).
package api
