package eventstore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// guard is what a commit writes besides its events and its head (a
// space's role check and membership items, a deletion's tombstone), and
// what each of those writes failing means. A nil *guard is none.
type guard struct {
	writes []types.TransactWriteItem
	// refusals[i] answers writes[i]'s condition failing; nil: unexplained
	// works it out.
	refusals []error
	// explain, where set for i, works out writes[i]'s answer by reading
	// (what changed since the guard was built).
	explain map[int]func(context.Context) error
	// unexplained answers a failed write whose refusal is nil (a space's
	// role check: not a member, or a role that may not).
	unexplained func(context.Context) error
	// newStream, if set, is the answer when the stream's head exists: the
	// commit creates the stream (a space), and never commits at the real
	// head.
	newStream error
	// mayAccept, set on a write to a space, lets the commit be accepted
	// instead when the space is busy (accept); membership changes and
	// deletions always commit at the head.
	mayAccept bool
	// whilePending, if set, runs when the commit failed on a member's
	// accepted events not yet placed (errMemberPending), and returns the
	// head to make it again at: a removal stops the member's accepts (the
	// first time) and waits until their events are placed.
	whilePending func(ctx context.Context, now time.Time, first bool) (Head, error)
}

// mayBeAccepted reports whether the commit may be accepted instead of
// made at the head.
func (g *guard) mayBeAccepted() bool { return g != nil && g.mayAccept }

// check adds w, answered by refusal when its condition fails.
func (g *guard) check(w types.TransactWriteItem, refusal error) {
	g.writes = append(g.writes, w)
	g.refusals = append(g.refusals, refusal)
}

// count is the number of g's writes; 0 for none.
func (g *guard) count() int {
	if g == nil {
		return 0
	}
	return len(g.writes)
}

// firstFailed is the lowest of failed that is one of g's writes.
func (g *guard) firstFailed(failed []int) (int, bool) {
	first, ok := 0, false
	for _, ix := range failed {
		if ix < g.count() && (!ok || ix < first) {
			first, ok = ix, true
		}
	}
	return first, ok
}

// refusal is why write i failed.
func (g *guard) refusal(ctx context.Context, i int) error {
	if explain := g.explain[i]; explain != nil {
		return explain(ctx)
	}
	if err := g.refusals[i]; err != nil {
		return err
	}
	if g.unexplained == nil {
		return fmt.Errorf("eventstore: the guard's write %d failed its condition, which has no answer", i)
	}
	return g.unexplained(ctx)
}
