// Package eventstore owns the events table: its items (events, heads,
// floors, a space's meta and member items, a member's listings), the
// commits at a stream's head with the guards that decide them, the accepts
// of a busy space's writes and the sequencer that places them, the reads
// in commit order, and the decoding of the table's change feed (its
// DynamoDB Streams records). No other package writes the table but
// package retention, which trims it through Table.
//
// A stream is a user's or a space's ordered log of events. Store is the
// service: each of its methods names an operation and the errors it
// returns. docs/design.md has the whole argument.
package eventstore
