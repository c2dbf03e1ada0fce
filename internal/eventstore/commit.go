// Commits at a stream's head. Each stream (a user's own, or a space's)
// has a head item holding the sequence number of its last committed
// event, and the token bucket that limits the rate of commits (tokens,
// refilled_ms), written together under the head's condition. A commit of
// n events writes them at head+1 … head+n and moves the head from head to
// head+n under the condition that it is still at head, in the same
// transaction as the key's ledger record: sequence numbers are handed out
// in commit order with no gaps, and no event can commit at or below one
// already committed. No event can be written without moving the head, and
// a read stops before the first position that does not follow the last.

package eventstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Store is the events table called table, committed with the records of
// ledger.
type Store struct {
	t       Table
	ledger  *dynamodbstore.Store
	heads   *headCache
	changes ratelimit.Bucket
	// accepted, when set, turns on accepts of a busy space's writes
	// (AcceptWhenContended) and is told of each.
	accepted func(stream string)
}

// AcceptWhenContended turns on the busy-space path: a write to a space
// whose head this environment found moved in the last contendedFor is
// accepted (one transaction of its record, the writer's role check and
// the event under a pending key, no head) and listed once package
// sequencer places it; wake is told of the stream of each accept, to
// sequence it (nil: something else sequences, such as a consumer of the
// table's stream).
// The user's own streams, membership changes and deletions always commit
// at the head.
func (l *Store) AcceptWhenContended(wake func(stream string)) {
	if wake == nil {
		wake = func(string) {}
	}
	l.accepted = wake
}

// contendedFor is how long an environment accepts a space's writes after
// a commit there found the head moved.
const contendedFor = time.Second

var _ idempotency.Store[Change] = (*Store)(nil)

// New returns the Store of the events table called table. Each user's
// commits are limited to the changes bucket (a zero Bucket is no limit).
func New(client *dynamodb.Client, table string, ledger *dynamodbstore.Store, changes ratelimit.Bucket) *Store {
	return &Store{t: Table{Client: client, Name: table}, ledger: ledger, heads: newHeadCache(maxHeadCacheBytes), changes: changes}
}

// maxHeadAttempts bounds the attempts of one Commit against a head other
// writers keep moving; past it the commit reports a conflict, which the
// flow retries after a backoff.
const maxHeadAttempts = 8

// StorageFull is the code of errStorageFull, an error code of the events
// API's own.
const StorageFull errcode.Code = "USER_STORAGE_FULL"

// errStorageFull is the answer when a user's events reach DynamoDB's item
// collection limit.
var errStorageFull = errcode.New(StorageFull,
	"This user's stored events have reached the service's storage limit; nothing was stored, and retrying will not help until events are removed")

// Commit makes changes, exactly one Change, with rec: its events at the
// next positions of its stream's commit order, each conditioned on its id
// being new for its stream, with the guard its operation builds. It
// returns what idempotency.Store's Commit returns; an event whose id is
// stored already is an *idempotency.WriteConditionError whose indexes are
// into the change's events (Append's, in the order given). The errors of
// each operation are its constructor's (Append, Delete, CreateSpace,
// AddMember, RemoveMember, Leave); any change may also be refused with
// errRateLimited or errStorageFull.
//
// The environment remembers the last head it saw of each user, so that
// the common case (a user's writes reaching an environment that saw their
// last one) is one call. When another environment moved the head
// meanwhile, the failed condition returns the head item, and the commit
// is made again at the real head: two calls (three where the backend
// returns no item, and the head is read).
//
// Each commit takes a token of the user's bucket, kept on the head item
// and written with it: a commit over the user's rate is refused with
// errRateLimited, before anything is sent where the environment's head
// is current (after the one call that finds it is not, otherwise), and
// the limit costs no call and no capacity of its own. The token is taken
// before the key's record is looked at, so a retry of a key already
// stored, over the rate, is refused too, and answered once a token comes.
func (l *Store) Commit(ctx context.Context, rec idempotency.Record, changes []Change, now time.Time) error {
	if len(changes) != 1 {
		return errOneChange
	}
	stream := changes[0].stream
	space := IsSpaceStream(stream)
	if !space && stream != rec.UserID {
		return errOtherStream
	}
	g, evs, err := changes[0].op.plan(ctx, l.t, stream, rec.UserID, now)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return errNoEvents
	}
	acceptable := l.accepted != nil && g.mayBeAccepted()
	if acceptable && l.heads.contended(stream, now) {
		return l.accept(ctx, rec, evs, now)
	}
	extra := g.count()
	n := uint64(len(evs))
	h := l.heads.get(stream)
	if g != nil && g.newStream != nil {
		h = Head{}
	}
	leaving := false // a removal has marked its member leaving (whilePending)
	for attempt := 1; ; attempt++ {
		bucket, wait, ok := l.changes.Take(h.Bucket, now)
		if !ok {
			return rateLimited(wait)
		}
		// The guard's writes first: a backend that reports only the first
		// failed condition reports a refusal before a moved head.
		writes := make([]types.TransactWriteItem, 0, extra+len(evs)+1)
		if g != nil {
			writes = append(writes, g.writes...)
		}
		for i, ev := range evs {
			if ev.Stream != stream {
				return errOtherStream
			}
			ev.Position = syncevent.At(h.Seq + uint64(i) + 1)
			if space {
				ev.Author = rec.UserID
			}
			writes = append(writes, l.putNew(ev))
		}
		next := Head{Seq: h.Seq + n, Bucket: bucket}
		// A write that may be accepted gives way to the sequencer's passes.
		var yieldAt time.Time
		if acceptable {
			yieldAt = now
		}
		writes = append(writes, l.t.MoveHead(stream, h.Seq, next, yieldAt))
		err := l.ledger.Commit(ctx, rec, writes, now)
		var failed *dynamodbstore.ConditionFailedError
		if !errors.As(err, &failed) {
			if err == nil {
				l.heads.put(stream, next)
			}
			return classify(err)
		}
		if first, ok := g.firstFailed(failed.Indexes); ok {
			if acceptable {
				// The role check failed: most often on the writer's own
				// pending events, in a space still busy. The accept checks
				// the role again and explains a refusal itself, so no read
				// is spent here, and the environment stays on the accept
				// path for the window as on a moved head.
				err := l.accept(ctx, rec, evs, now)
				if err == nil {
					l.heads.contend(stream, now.Add(contendedFor))
				}
				return err
			}
			err := g.refusal(ctx, first)
			if !errors.Is(err, errMemberPending) {
				return err
			}
			// The member has accepted events not yet placed: this one
			// goes once they are placed.
			if attempt == maxHeadAttempts {
				return fmt.Errorf("%w: the member's accepted events are still being sequenced", idempotency.ErrTransactionConflict)
			}
			if h, err = l.awaitMemberPlaced(ctx, g, stream, now, !leaving); err != nil {
				return err
			}
			leaving = true
			continue
		}
		headItem, eventsFailed := splitHeadFailure(failed, extra, len(evs))
		if eventsFailed != nil {
			return idempotency.RefusedAt(eventsFailed...)
		}
		if g != nil && g.newStream != nil {
			return g.newStream
		}
		if acceptable {
			l.heads.contend(stream, now.Add(contendedFor))
			return l.accept(ctx, rec, evs, now)
		}
		if attempt == maxHeadAttempts {
			return fmt.Errorf("%w: the head of the stream kept moving", idempotency.ErrTransactionConflict)
		}
		if h, err = l.t.headFrom(ctx, stream, headItem); err != nil {
			return err
		}
		l.heads.put(stream, h)
	}
}

// awaitMemberPlaced waits, for a commit refused because a member has
// accepted events not yet placed, until they are, and returns the head to
// commit at: a removal's guard stops the member's accepts (the first
// time) and places the space's front until the member's count is 0;
// another commit drains the stream once.
func (l *Store) awaitMemberPlaced(ctx context.Context, g *guard, stream string, now time.Time, first bool) (Head, error) {
	if g != nil && g.whilePending != nil {
		return g.whilePending(ctx, now, first)
	}
	drained, ok, err := drainForHead(ctx, l.t, stream)
	if err != nil {
		return Head{}, err
	}
	if !ok {
		return l.heads.get(stream), nil
	}
	return drained, nil
}

// accept stores evs, a space's, under pending keys with rec and the
// writer's role check, which counts them on their member item: no head is
// read or moved, so accepts to one space do not fail on each other.
func (l *Store) accept(ctx context.Context, rec idempotency.Record, evs []syncevent.Event, now time.Time) error {
	stream := evs[0].Stream
	limit := acceptLimitOf(l.changes)
	var from int64 // the member's window as found, when it has passed
	for attempt := 1; ; attempt++ {
		writes := make([]types.TransactWriteItem, 0, len(evs)+1)
		writes = append(writes, acceptCheck(l.t, stream, rec.UserID, len(evs), now, limit, from))
		for i, ev := range evs {
			ev.Author = rec.UserID
			key := PendingKey(now, evs[0].ID, i)
			writes = append(writes, l.put(encodePending(ev, key)))
		}
		err := l.ledger.Commit(ctx, rec, writes, now)
		var failed *dynamodbstore.ConditionFailedError
		if !errors.As(err, &failed) {
			if err == nil {
				l.accepted(stream)
			}
			return classify(err)
		}
		if !slices.Contains(failed.Indexes, 0) {
			refused := make([]int, 0, len(failed.Indexes))
			for _, ix := range failed.Indexes {
				refused = append(refused, ix-1)
			}
			return idempotency.RefusedAt(refused...)
		}
		err = whyNotAccepted(ctx, l.t, stream, rec.UserID, limit, now)
		var passed *acceptWindowPassedError
		switch {
		case errors.As(err, &passed) && attempt == 1:
			from = passed.From // the count starts over in this window
			continue
		case errors.Is(err, errAcceptsLimited):
			return rateLimited(limit.ends(now).Sub(now))
		case errors.Is(err, errMemberPending), errors.As(err, &passed):
			// A member in a role that may write, refused: being removed
			// (markMemberLeaving), or counted in a window that moved
			// meanwhile. Retried, it is answered once the removal
			// commits, or the mark lapses.
			return fmt.Errorf("%w: the writer is being removed from the space", idempotency.ErrTransactionConflict)
		}
		return err
	}
}

// acceptLimitOf is each member's limit on a busy space's accepts, from the
// changes bucket: its burst in each window of burst/rate seconds, so the
// same rate on average, in windows of a second at least (none when the
// bucket is no limit).
func acceptLimitOf(changes ratelimit.Bucket) acceptLimit {
	if changes.Rate <= 0 {
		return acceptLimit{}
	}
	window := changes.Burst / changes.Rate
	if window < 1 {
		return acceptLimit{Window: time.Second, Max: int(math.Ceil(changes.Rate))}
	}
	return acceptLimit{Window: time.Duration(window * float64(time.Second)), Max: int(changes.Burst)}
}

// errOtherStream refuses events of a stream that is neither the caller's
// own nor a space's, or of several streams in one commit.
var errOtherStream = errors.New("eventstore: a commit's events are of the caller's own stream or of one space")

// errRateLimited is the answer to a commit over the user's rate; its
// RetryAfter says when the next token comes.
var errRateLimited = errcode.New(errcode.RateLimited,
	"Too many changes from this user: this request was not carried out; send it again with the same key after the time in Retry-After")

// rateLimited is errRateLimited with the wait. It wraps nothing: a refusal
// of the client's pace is no failure of the service, and is logged as a
// refusal, not as an error.
func rateLimited(wait time.Duration) error {
	return &errcode.Error{Code: errRateLimited.Code, Message: errRateLimited.Message, RetryAfter: wait}
}

// errNoEvents refuses a commit of nothing: the head's condition is on its
// sequence number alone, which such a commit would not move.
var errNoEvents = errors.New("eventstore: a commit needs at least one event")

// errOneChange refuses a commit of several changes, or none: each
// request makes one.
var errOneChange = errors.New("eventstore: a commit makes exactly one change")

// classify adds what the ledger's store cannot know: a full item
// collection here is a user's events.
func classify(err error) error {
	if errors.Is(err, dynamodbstore.ErrItemCollectionFull) {
		return &errcode.Error{Code: errStorageFull.Code, Message: errStorageFull.Message, Err: err}
	}
	return err
}

// putNew is the write that stores ev at ev.Position, conditioned on its id
// being new for its user. Only Commit uses it, with the head's write.
func (l *Store) putNew(ev syncevent.Event) types.TransactWriteItem {
	return l.put(encodeEvent(ev))
}

// put is the write of an event item, conditioned on its id being new for
// its stream.
func (l *Store) put(item map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(l.t.Name),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": attrID},
	}}
}

// splitHeadFailure separates the failed head (the write after the guard's
// extra writes and the n events; its item, if the backend returned it)
// from failed events, whose indexes it gives into the events.
func splitHeadFailure(f *dynamodbstore.ConditionFailedError, extra, n int) (headItem map[string]types.AttributeValue, events []int) {
	for i, ix := range f.Indexes {
		switch {
		case ix == extra+n:
			headItem = f.Items[i]
		case ix >= extra:
			events = append(events, ix-extra)
		}
	}
	return headItem, events
}

// get reads a ledger record.
func (l *Store) Get(ctx context.Context, userID, key string) (idempotency.Record, bool, error) {
	return l.ledger.Get(ctx, userID, key)
}

// Head reads userID's head with strong consistency: the sequence number of
// the user's last committed event, 0 if none.
func (l *Store) Head(ctx context.Context, userID string) (uint64, error) {
	h, err := l.t.ReadHead(ctx, userID)
	return h.Seq, err
}
