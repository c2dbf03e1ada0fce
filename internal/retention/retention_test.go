package retention_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/apitest"
	"github.com/sync-events/sync-events/internal/eventlog"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/retention"
)

// failing trims as its Trimmer does, but fails for one stream.
type failing struct {
	retention.Trimmer
	stream string
}

func (f failing) Trim(ctx context.Context, stream string, cutoff time.Time, limit int) (eventlog.TrimResult, error) {
	if stream == f.stream {
		return eventlog.TrimResult{}, errors.New("throttled")
	}
	return f.Trimmer.Trim(ctx, stream, cutoff, limit)
}

// Handle trims each stream whose head a record moved, once a batch however
// many records name it, with the cutoff its policy gives: events older go,
// each stream's newest stays, and younger ones stay. A stream that fails
// fails the batch without holding the others back, and the batch retried
// removes nothing twice.
func TestHandleTrimsEachStreamWhoseHeadMoved(t *testing.T) {
	hs := apitest.New(t)
	log := eventlog.New(hs.B.Client, hs.B.Tables.Events, hs.B.Ledger(), ratelimit.Bucket{})
	posts := map[string]int{"alice": 4, "bob": 3, "carol": 2}
	var batch events.DynamoDBEvent
	for user, n := range posts {
		for range n {
			apitest.WantResponse(t, hs.Post(user, uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
			rec, ok, err := eventlog.HeadRecord(context.Background(), hs.B.Client, hs.B.Tables.Events, user)
			if err != nil || !ok {
				t.Fatalf("head of %s: %v %v", user, ok, err)
			}
			if user != "carol" { // carol's head did not move in this batch
				batch.Records = append(batch.Records, rec)
			}
		}
	}
	later := time.Now().Add(48 * time.Hour)
	policy := retention.Policy{Keep: 24 * time.Hour, Limit: 100}

	// Not old enough yet: nothing goes.
	rep, err := retention.Handle(context.Background(), log, policy, batch, time.Now())
	if err != nil || rep.Removed != 0 || rep.Streams != 2 {
		t.Fatalf("a day early: %+v, %v", rep, err)
	}
	// bob's trim fails: alice's goes on, the batch fails.
	rep, err = retention.Handle(context.Background(), failing{log, "bob"}, policy, batch, later)
	if !errors.Is(err, retention.ErrTrim) || rep.Removed != 3 {
		t.Fatalf("with bob failing: %+v, %v; want alice's 3 removed and ErrTrim", rep, err)
	}
	// The batch retried: bob's go, alice's are gone already.
	rep, err = retention.Handle(context.Background(), log, policy, batch, later)
	if err != nil || rep.Removed != 2 || rep.Trimmed != 1 {
		t.Fatalf("retried: %+v, %v; want bob's 2 removed", rep, err)
	}
	left := map[string]int{}
	for _, ev := range hs.B.StoredEvents(t) {
		left[ev.UserID]++
	}
	if want := map[string]int{"alice": 1, "bob": 1, "carol": 2}; fmt.Sprint(left) != fmt.Sprint(want) {
		t.Errorf("events left %v, want %v (each trimmed stream's newest; carol untouched)", left, want)
	}
}
