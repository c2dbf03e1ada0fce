package eventstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// A head move is refused unless the head is where the writer thinks, and
// a move that may be accepted instead is refused while the head yields
// to the sequencer; the sequencer's own moves, and writes that cannot be
// accepted, are not. Each case runs on the backend under test.
func TestMoveHeadYieldsOnlyWhatMayBeAccepted(t *testing.T) {
	b := ddbtest.Start(t)
	tbl := eventstore.Table{Client: b.Client, Name: b.Tables.Events}
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	move := func(w types.TransactWriteItem) error {
		_, err := b.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{w}})
		return err
	}
	for _, c := range []struct {
		name    string
		head    eventstore.Head // as stored before the move
		from    uint64
		yieldAt time.Time
		moves   bool
	}{
		{"at the head, nothing yielding", eventstore.Head{Seq: 3}, 3, now, true},
		{"behind the head", eventstore.Head{Seq: 3}, 2, time.Time{}, false},
		{"yielding, a write that may be accepted", eventstore.Head{Seq: 3, YieldUntil: now.Add(time.Second)}, 3, now, false},
		{"yielding, a write that may not", eventstore.Head{Seq: 3, YieldUntil: now.Add(time.Second)}, 3, time.Time{}, true},
		{"yielding until now", eventstore.Head{Seq: 3, YieldUntil: now}, 3, now, true},
		{"yielding no more", eventstore.Head{Seq: 3, YieldUntil: now.Add(-time.Millisecond)}, 3, now, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream := "s-" + t.Name()
			if err := move(tbl.MoveHead(stream, 0, c.head, time.Time{})); err != nil {
				t.Fatalf("storing the head: %v", err)
			}
			err := move(tbl.MoveHead(stream, c.from, eventstore.Head{Seq: c.from + 1}, c.yieldAt))
			var cancelled *types.TransactionCanceledException
			if c.moves != (err == nil) || (err != nil && !errors.As(err, &cancelled)) {
				t.Fatalf("moved: %v, want %v", err, c.moves)
			}
			got, err := tbl.ReadHead(ctx, stream)
			if err != nil {
				t.Fatal(err)
			}
			want := c.head
			if c.moves {
				want = eventstore.Head{Seq: c.from + 1}
			}
			if got.Seq != want.Seq || !got.YieldUntil.Equal(want.YieldUntil) {
				t.Errorf("head %+v, want %+v", got, want)
			}
		})
	}
}
