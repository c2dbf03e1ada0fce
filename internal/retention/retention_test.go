package retention_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/retention"
)

// failing trims as its Trimmer does, but fails for one stream.
type failing struct {
	retention.Trimmer
	stream string
}

func (f failing) Trim(ctx context.Context, stream string, cutoff time.Time, limit int) (eventstore.TrimResult, error) {
	if stream == f.stream {
		return eventstore.TrimResult{}, errors.New("throttled")
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
	log := eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}
	posts := map[string]int{"alice": 4, "bob": 3, "carol": 2}
	var batch events.DynamoDBEvent
	for user, n := range posts {
		for range n {
			apitest.WantResponse(t, hs.Post(user, uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
			rec, ok, err := eventstore.HeadRecord(context.Background(), eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}, user)
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
		left[ev.Stream]++
	}
	if want := map[string]int{"alice": 1, "bob": 1, "carol": 2}; fmt.Sprint(left) != fmt.Sprint(want) {
		t.Errorf("events left %v, want %v (each trimmed stream's newest; carol untouched)", left, want)
	}
}

// counting is a Trimmer that counts its calls and trims nothing.
type counting struct{ calls atomic.Int32 }

func (c *counting) Trim(context.Context, string, time.Time, int) (eventstore.TrimResult, error) {
	c.calls.Add(1)
	return eventstore.TrimResult{}, nil
}

// With the invocation's deadline near, streams are deferred to their next
// batch, not trimmed in a hurry nor failed; with time, each is trimmed once.
func TestHandleDefersStreamsWhenTimeRunsOut(t *testing.T) {
	var batch events.DynamoDBEvent
	for i := range 20 {
		batch.Records = append(batch.Records, headRecord(fmt.Sprintf("user-%d", i%10), uint64(i+1)))
	}
	for _, tt := range []struct {
		left            time.Duration
		trims, deferred int
	}{{time.Minute, 10, 0}, {10 * time.Second, 0, 10}} {
		ctx, cancel := context.WithTimeout(context.Background(), tt.left)
		c := &counting{}
		rep, err := retention.Handle(ctx, c, retention.Policy{Keep: time.Hour, Limit: 10}, batch, time.Now())
		cancel()
		if err != nil || int(c.calls.Load()) != tt.trims || rep.Deferred != tt.deferred || rep.Streams != 10 {
			t.Errorf("%v left: %d trims, %+v, %v; want %d trims, %d deferred", tt.left, c.calls.Load(), rep, err, tt.trims, tt.deferred)
		}
	}
}

func headRecord(user string, seq uint64) events.DynamoDBEventRecord {
	img := map[string]events.DynamoDBAttributeValue{
		"user_id": events.NewStringAttribute(user), "event_id": events.NewStringAttribute("head"), "seq": events.NewNumberAttribute(fmt.Sprint(seq)),
	}
	return events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
		Keys: map[string]events.DynamoDBAttributeValue{"user_id": img["user_id"], "event_id": img["event_id"]}, NewImage: img,
	}}
}
