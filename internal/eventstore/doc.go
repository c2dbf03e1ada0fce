// Package eventstore owns the events table, and is its one writer: its
// items (events, heads, floors, a space's meta and member items, a
// member's listings), the commits at a stream's head and the guards that
// decide them, the accepts of a busy space's writes and the passes that
// place them, the reads in commit order, the trim below a stream's floor
// (which streams to trim, and when, is package retention's), and the
// decoding of the table's change feed (its DynamoDB Streams records).
//
// A stream is a user's or a space's ordered log of events. Store is the
// service: it commits a Change, made by one operation (Append, Delete,
// CreateSpace, AddMember, RemoveMember, Leave) whose doc names the errors
// it is refused with. docs/design.md has the whole argument.
package eventstore
