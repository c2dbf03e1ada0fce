package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/local/embedded"
	"github.com/sync-events/sync-events/internal/local/streamfeed"
	"github.com/sync-events/sync-events/internal/poke"
)

// channelPublisher keeps each channel's highest cursor, and fails while
// failing() says so.
type channelPublisher struct {
	mu      sync.Mutex
	failing func() bool
	fails   int
	latest  map[string]string
}

func (p *channelPublisher) Publish(_ context.Context, pokes []poke.Poke) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failing != nil && p.failing() {
		p.fails++
		return errors.New("the Event API is unavailable")
	}
	for _, pk := range pokes {
		if pk.Cursor > p.latest[pk.Channel] {
			p.latest[pk.Channel] = pk.Cursor
		}
	}
	return nil
}

func (p *channelPublisher) cursor(channel string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latest[channel]
}

// TestPokesFromTheEventsTablesStream runs the function on the events
// table's real stream, read as the event source mapping reads it (shard
// iterators, batches of up to 100, a failed batch retried whole): with
// the template's filter, and without it (heads and event items mixed in
// each batch), with the publish failing at first and for a while. Each
// user's last poke is their head, whatever failed on the way, and a batch
// given up after its retries holds up none after it.
func TestPokesFromTheEventsTablesStream(t *testing.T) {
	hs := apitest.New(t)
	if hs.B.Name == embedded.Name {
		t.Skip("kumo writes no stream records for TransactWriteItems; CI runs this on moto and dynoxide (make run on kumo pokes from its answers instead)")
	}
	arn, err := streamfeed.StreamARN(context.Background(), hs.B.Client, hs.B.Tables.Events)
	if err != nil || arn == "" {
		t.Fatalf("the events table has no stream on %s: %q %v", hs.B.Name, arn, err)
	}
	for _, filter := range []string{eventstore.HeadRecordFilter, ""} {
		t.Run("filter="+filter, func(t *testing.T) {
			down := false // the Event API is unavailable; under pub.mu
			pub := &channelPublisher{latest: map[string]string{}, failing: func() bool { return down }}
			m := &streamfeed.Mapping{Function: handler(pub, slog.New(slog.DiscardHandler)), Filter: filter, BatchSize: 100, MaxRetries: 2, RetryBase: 20 * time.Millisecond}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go streamfeed.Poll(ctx, streamfeed.LocalClient(hs.B.Endpoint), arn, m, 50*time.Millisecond, nil)

			users := []string{"u-" + uuid.NewString()[:8], "u-" + uuid.NewString()[:8], "u-" + uuid.NewString()[:8]}
			post := func(user string) {
				id := uuid.NewString()
				if resp := hs.Post(user, uuid.NewString(), apitest.EventBody(t, id)); resp.StatusCode != 201 {
					t.Fatalf("post: %d %s", resp.StatusCode, resp.Body)
				}
			}
			// The iterators start at LATEST: post until the first poke
			// shows the stream is read.
			waitFor(t, func() bool { post(users[0]); return pub.cursor("/users/"+users[0]) != "" })

			// The publish fails for a while: every batch meanwhile is
			// retried, then dropped.
			pub.mu.Lock()
			down = true
			pub.mu.Unlock()
			for i := range 6 {
				post(users[i%3])
			}
			waitFor(t, func() bool { pub.mu.Lock(); defer pub.mu.Unlock(); return pub.fails > m.MaxRetries })
			pub.mu.Lock()
			down = false
			pub.mu.Unlock()
			// Then it is back: each user's next commit pokes at their
			// head, the dropped batches' events included.
			for i := range 9 {
				post(users[i%3])
			}
			for _, u := range users {
				_, cursors := hs.Drain(u, "", 1000)
				head := cursors[len(cursors)-1]
				waitFor(t, func() bool { return pub.cursor("/users/"+u) == head })
			}
		})
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatal("not within 15 s")
}

// TestHandlerLogsNoUserIDs: the function's log lines carry counts only.
func TestHandlerLogsNoUserIDs(t *testing.T) {
	var out strings.Builder
	fn := handler(&channelPublisher{latest: map[string]string{}}, slog.New(slog.NewJSONHandler(&out, nil)))
	img := map[string]events.DynamoDBAttributeValue{
		"user_id": events.NewStringAttribute("secret-user"), "event_id": events.NewStringAttribute("head"), "seq": events.NewNumberAttribute("3"),
	}
	rec := events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{NewImage: img}}
	if err := fn(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "secret-user") || !strings.Contains(out.String(), `"published":1`) {
		t.Errorf("log: %s", out.String())
	}
}
