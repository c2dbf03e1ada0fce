package eventstore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// guard is what a commit writes besides its events and its head (a
// space's role check and membership items, a deletion's tombstone), and
// what each of those writes failing means. A nil *guard is none.
type guard struct {
	Writes []types.TransactWriteItem
	// Refusals[i] answers Writes[i]'s condition failing; nil: Unexplained
	// works it out.
	Refusals []error
	// Explain, where set for i, works out Writes[i]'s answer by reading
	// (what changed since the guard was built).
	Explain map[int]func(context.Context) error
	// Unexplained answers a failed write whose refusal is nil (a space's
	// role check: not a member, or a role that may not).
	Unexplained func(context.Context) error
	// Payload, if set, replaces the commit's event's payload: what only
	// the guard knows (the role a removed member had).
	Payload []byte
	// NewStream, if set, is the answer when the stream's head exists: the
	// commit creates the stream (a space), and never commits at the real
	// head.
	NewStream error
}

// Check adds w, answered by refusal when its condition fails.
func (g *guard) Check(w types.TransactWriteItem, refusal error) {
	g.Writes = append(g.Writes, w)
	g.Refusals = append(g.Refusals, refusal)
}

// Count is the number of g's writes; 0 for none.
func (g *guard) Count() int {
	if g == nil {
		return 0
	}
	return len(g.Writes)
}

// FirstFailed is the lowest of failed that is one of g's writes.
func (g *guard) FirstFailed(failed []int) (int, bool) {
	first, ok := 0, false
	for _, ix := range failed {
		if ix < g.Count() && (!ok || ix < first) {
			first, ok = ix, true
		}
	}
	return first, ok
}

// Refusal is why write i failed.
func (g *guard) Refusal(ctx context.Context, i int) error {
	if explain := g.Explain[i]; explain != nil {
		return explain(ctx)
	}
	if err := g.Refusals[i]; err != nil {
		return err
	}
	if g.Unexplained == nil {
		return fmt.Errorf("eventstore: the guard's write %d failed its condition, which has no answer", i)
	}
	return g.Unexplained(ctx)
}
