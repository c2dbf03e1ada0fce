package streamfeed_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/local/streamfeed"
)

func record(name, id string) events.DynamoDBEventRecord {
	keys := map[string]events.DynamoDBAttributeValue{"user_id": events.NewStringAttribute("u"), "event_id": events.NewStringAttribute(id)}
	return events.DynamoDBEventRecord{EventName: name, Change: events.DynamoDBStreamRecord{Keys: keys, NewImage: keys}}
}

// TestTheHeadFilterPassesHeadWritesOnly applies the template's filter
// pattern to the JSON form of records, as Lambda event filtering does.
func TestTheHeadFilterPassesHeadWritesOnly(t *testing.T) {
	for _, tc := range []struct {
		rec  events.DynamoDBEventRecord
		pass bool
	}{
		{record("INSERT", "head"), true},
		{record("MODIFY", "head"), true},
		{record("REMOVE", "head"), false},
		{record("INSERT", "9b2f0c3e-1d4a-4e5b-8c6d-7e8f9a0b1c2d"), false},
		{record("MODIFY", "headx"), false},
		{events.DynamoDBEventRecord{EventName: "INSERT"}, false},
	} {
		var got int
		m := &streamfeed.Mapping{Filter: eventstore.HeadRecordFilter, BatchSize: 10, Function: func(_ context.Context, ev events.DynamoDBEvent) error {
			got += len(ev.Records)
			return nil
		}}
		st, err := m.Deliver(context.Background(), []events.DynamoDBEventRecord{tc.rec})
		if err != nil || (got == 1) != tc.pass || st.Filtered+st.Delivered != 1 {
			t.Errorf("%s %v: delivered %d (%+v, %v), want passed %v", tc.rec.EventName, tc.rec.Change.Keys["event_id"], got, st, err, tc.pass)
		}
	}
}

// TestAFailedBatchIsRetriedWholeThenDropped: as an event source mapping
// with MaximumRetryAttempts, a failing batch is delivered again, whole,
// then given up, and the batches after it still go.
func TestAFailedBatchIsRetriedWholeThenDropped(t *testing.T) {
	recs := make([]events.DynamoDBEventRecord, 5)
	for i := range recs {
		recs[i] = record("MODIFY", "head")
	}
	for _, tc := range []struct {
		name     string
		failures int // calls that fail, from the first
		want     streamfeed.Stats
	}{
		{"no failure", 0, streamfeed.Stats{Batches: 3, Attempts: 3, Delivered: 5}},
		{"the first batch fails twice, then passes", 2, streamfeed.Stats{Batches: 3, Attempts: 5, Delivered: 5}},
		{"the first batch fails past its retries", 4, streamfeed.Stats{Batches: 3, Attempts: 6, Delivered: 3, Dropped: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			var sizes []int
			m := &streamfeed.Mapping{BatchSize: 2, MaxRetries: 3, Function: func(_ context.Context, ev events.DynamoDBEvent) error {
				calls++
				sizes = append(sizes, len(ev.Records))
				if calls <= tc.failures {
					return errors.New("down")
				}
				return nil
			}}
			st, err := m.Deliver(context.Background(), recs)
			if err != nil || st != tc.want {
				t.Errorf("stats %+v %v, want %+v", st, err, tc.want)
			}
			for i, n := range sizes[:min(tc.failures+1, len(sizes))] {
				if n != 2 {
					t.Errorf("attempt %d of the first batch held %d records, want the whole batch of 2", i+1, n)
				}
			}
		})
	}
}
