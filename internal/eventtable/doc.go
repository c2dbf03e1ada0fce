// Package eventtable is the events table itself: its definition (keys,
// the index by position, the stream), the shape of each kind of item it
// holds (events, heads, floors), and the few calls every reader and
// writer of it shares (a consistent read of one item, the writes that
// put one, batches retried while DynamoDB leaves work unprocessed). Every
// package that touches the table goes through it, so that an attribute's
// name and an item's encoding have one owner.
//
// It decides nothing: what a commit writes and in what order is package
// eventlog's, who may write to a space is package spaces', how an event
// is deleted package deletion's, what retention removes package
// retention's, and what a head's stream record tells package
// headstream's. A Guard carries the writes those packages add to a
// commit, and what each failing means.
package eventtable
