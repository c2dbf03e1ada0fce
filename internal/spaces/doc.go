// Package spaces owns spaces: streams of events shared by their members,
// each with a role. A space's items live in the events table under the
// partition Stream(id): its head and its events, as a user's; its meta
// item (name, counts of members and owners); and one item per member
// (role). Each member's own partition holds a listing item per space they
// are in (role, name) and a count of their spaces, so that a member lists
// their spaces with one Query and the limits hold in the transactions
// that change them.
//
// Every commit to a space checks the caller's role in the same
// transaction as its events, its head and its ledger record: Guard adds a
// ConditionCheck on the caller's member item. So no write can commit
// after a removal commits: the removal deletes that item, and a
// transaction whose condition read it either commits before the removal
// (its position below the removal's) or fails. Membership changes are
// commits too: each writes an event of a reserved type
// (syncevent.ReservedTypes) at the space's next position, so a space's
// stream orders them with its events.
//
// It builds what a commit to a space adds and reads members and
// listings; the commit itself, its positions and its head are package
// eventlog's, deleting an event package deletion's, and the items'
// encoding package eventtable's.
package spaces
