// Package eventlog is the one door to the events table. It stores events
// with their key's record in one transaction, each at the next position of
// its user's commit order, and reads them back in that order, never past a
// position not yet visible. It implements idempotency.Store for events, on
// the ledger of package dynamodbstore.
//
// Each user has a head item holding the sequence number of their last
// committed event, and the token bucket that limits their rate of commits
// (tokens, refilled_ms), written together under the head's condition. A
// commit of n events writes them at head+1 … head+n and moves the head
// from head to head+n under the condition that it is still at head, in
// the same transaction: sequence numbers are handed out
// in commit order with no gaps, and no event can commit at or below one
// already committed. No event can be written without moving the head, and
// a read stops before the first position that does not follow the last
// (docs/design.md has the whole argument).
//
// A stream is a user's own events, or a space's (spaces.go): a space's
// partition holds its head and events as a user's does, and its members'
// items, and every commit to it checks the writer's role in the same
// transaction. A deletion (delete.go) never removes an event: it makes it
// a tombstone at its position and writes a notice at the next. Retention
// (retention.go) removes a stream's oldest events, below a floor that
// reads respect. The stream's head writes, read from the table's stream,
// tell devices that a stream moved (HeadChange, HeadStreamFilter).
//
// It owns the events table's definition (keys, index, stream) and its
// items; it knows nothing of HTTP, and what an event is is package
// syncevent's.
package eventlog
