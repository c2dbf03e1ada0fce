// Package eventlog commits events and reads them back in commit order. It
// stores events with their key's record in one transaction, each at the
// next position of its stream's commit order, and reads them back in that
// order, never past a position not yet visible. It implements
// idempotency.Store for events, on the ledger of package dynamodbstore.
//
// Each stream (a user's own, or a space's) has a head item holding the
// sequence number of its last committed event, and the token bucket that
// limits the rate of commits (tokens, refilled_ms), written together
// under the head's condition. A commit of n events writes them at head+1
// … head+n and moves the head from head to head+n under the condition
// that it is still at head, in the same transaction: sequence numbers are
// handed out in commit order with no gaps, and no event can commit at or
// below one already committed. No event can be written without moving
// the head, and a read stops before the first position that does not
// follow the last (docs/design.md has the whole argument).
//
// A commit carries the guard of what it is (an eventtable.Guard): a
// space's role check and membership items (package spaces), a deletion's
// tombstone (package deletion). Reads respect the floor below which
// retention removed events (package retention trims; a read from below it
// is ErrCursorExpired).
//
// It owns commit order, the heads and the reads; the items' encoding is
// package eventtable's, what an event is package syncevent's, and it
// knows nothing of HTTP.
package eventlog
