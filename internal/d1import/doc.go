// Package d1import moves the ledger of the Workers + D1 service this one
// replaces into this service's ledger table, so that a device's retry of a
// key the original answered before the cut-over is replayed after it
// instead of executed a second time (cmd/sync-events-import-d1;
// docs/operations.md, "Cut-over from the Workers + D1 service").
//
// [Open] reads the export: the .sql file `wrangler d1 export` writes
// (run as a script by SQLite, modernc.org/sqlite, in memory) or a SQLite
// database file. [Import] makes each row of idempotency_ledger a record:
// the key as this service reads the header that carried it
// (idempotency.ParseKey: lowercase), the user (through a user map if one
// is given), the status and response body byte for byte, the route and
// method given, created_at as it was, an expiry at created_at plus the
// retention, and the row's payload_hash with idempotency.HashSchemeD1JS,
// so that a retry is held to the digest the original made. Each record is
// written with a conditional put (dynamodbstore.Store.Insert): a key
// already in the ledger keeps its record, so that an import can run twice
// and while the service takes traffic. Rows past their retention are
// skipped and counted; rows the service could not have written are
// refused, counted and listed by their key's first 8 characters, never
// guessed at ([Reason]).
package d1import
