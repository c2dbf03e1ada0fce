package eventstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// putAt stores an event item at seq straight into the table, as a commit
// whose predecessor is not visible yet would leave it, received on
// receivedOn(seq) (retention_test.go).
func putAt(t *testing.T, b *ddbtest.Backend, user string, seq uint64) {
	t.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err := b.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(b.Tables.Events),
		Item: map[string]types.AttributeValue{
			"user_id": s(user), "event_id": s(uuid.NewString()), "received_key": s(syncevent.At(seq).SortKey()),
			"type": s("t"), "occurred_at": s("2026-01-01T00:00:00Z"), "received_at": s(receivedOn(seq).Format(syncevent.TimestampLayout)),
			"payload": s(`{}`),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Read never passes a gap in the sequence: an event whose predecessor is
// not visible yet ends the read before it, so that a page's cursor stays
// at the last event with no gap, and the predecessor is read when it shows.
func TestReadStopsAtAGap(t *testing.T) {
	b := ddbtest.Start(t)
	log := eventstore.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{})
	tests := []struct {
		name   string
		stored []uint64
		after  uint64
		batch  int
		want   []uint64
	}{
		{"no gap", []uint64{1, 2, 3}, 0, 10, []uint64{1, 2, 3}},
		{"gap after two", []uint64{1, 2, 4}, 0, 10, []uint64{1, 2}},
		{"gap first", []uint64{2, 3}, 0, 10, nil},
		{"gap after a cursor", []uint64{1, 2, 3, 4, 5, 7}, 5, 10, nil},
		{"gap across queries", []uint64{1, 2, 3, 5}, 0, 2, []uint64{1, 2, 3}},
		{"from a cursor", []uint64{1, 2, 3, 4}, 2, 1, []uint64{3, 4}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := fmt.Sprintf("user-%d", i)
			for _, seq := range tt.stored {
				putAt(t, b, user, seq)
			}
			var got []uint64
			for ev, err := range log.Read(context.Background(), user, syncevent.At(tt.after), tt.batch) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev.Position.Seq)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("read %v after %d, want %v", got, tt.after, tt.want)
			}
		})
	}
}
