package eventstore_test

// Trims below a stream's floor (Table.Trim), and what a read finds
// across it after them.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// day0 is when the first event of a retention test was received; event
// seq was received seq days later.
var day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func receivedOn(seq uint64) time.Time { return day0.Add(time.Duration(seq) * 24 * time.Hour) }

// putNumbers puts stream's item id (a head, a floor) holding nums.
func putNumbers(t *testing.T, b *ddbtest.Backend, stream, id string, nums map[string]uint64) {
	t.Helper()
	item := map[string]types.AttributeValue{
		"user_id": &types.AttributeValueMemberS{Value: stream}, "event_id": &types.AttributeValueMemberS{Value: id},
	}
	for name, n := range nums {
		item[name] = &types.AttributeValueMemberN{Value: fmt.Sprint(n)}
	}
	if _, err := b.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(b.Tables.Events), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// putStream stores events 1 … n of stream and its head at n.
func putStream(t *testing.T, b *ddbtest.Backend, stream string, n uint64) {
	t.Helper()
	for _, seq := range seqRange(1, n) {
		putAt(t, b, stream, seq)
	}
	putHead(t, b, stream, n)
}

// putHead sets stream's head at seq, as its last commit would.
func putHead(t *testing.T, b *ddbtest.Backend, stream string, seq uint64) {
	t.Helper()
	putNumbers(t, b, stream, "head", map[string]uint64{"seq": seq})
}

// putFloor leaves what a trim cut off after raising the floor to seq
// leaves.
func putFloor(t *testing.T, b *ddbtest.Backend, stream string, seq uint64) {
	t.Helper()
	putNumbers(t, b, stream, "floor", map[string]uint64{"seq": seq})
}

func readSeqs(t *testing.T, log *eventstore.Store, stream string, after uint64) ([]uint64, error) {
	t.Helper()
	var got []uint64
	for ev, err := range log.Read(context.Background(), stream, syncevent.At(after), 3) {
		if err != nil {
			return got, err
		}
		got = append(got, ev.Position.Seq)
	}
	return got, nil
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// Trim removes the oldest events received before the cutoff, in position
// order, never the newest one, never past a gap, at most the limit; what
// stays is read from the start as the stream.
func TestTrimRemovesTheOldestEventsAndKeepsTheNewest(t *testing.T) {
	b := ddbtest.Start(t)
	log := eventstore.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{})
	trim := eventstore.Table{Client: b.Client, Name: b.Tables.Events}
	tests := []struct {
		name       string
		stored     []uint64
		cutoffDay  uint64 // events received before day cutoffDay may go
		limit      int
		wantFloor  uint64
		wantStayed []uint64 // read from the start
	}{
		{"none old enough", seqRange(1, 5), 1, 100, 0, seqRange(1, 5)},
		{"the oldest three", seqRange(1, 5), 4, 100, 3, seqRange(4, 5)},
		{"all old: the newest stays", seqRange(1, 5), 99, 100, 4, []uint64{5}},
		{"one event only", []uint64{1}, 99, 100, 0, []uint64{1}},
		{"at most the limit", seqRange(1, 9), 99, 2, 2, seqRange(3, 9)},
		{"across Query pages", seqRange(1, 40), 99, 100, 39, []uint64{40}},
		{"not past a gap", []uint64{1, 2, 4, 5}, 99, 100, 2, nil}, // 3 not visible yet: 4 waits for it
		{"no events", nil, 99, 100, 0, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := fmt.Sprintf("trim-%d", i)
			for _, seq := range tt.stored {
				putAt(t, b, stream, seq)
			}
			if len(tt.stored) > 0 {
				putHead(t, b, stream, slices.Max(tt.stored))
			}
			res, err := trim.Trim(context.Background(), stream, receivedOn(tt.cutoffDay), tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if res.Floor != tt.wantFloor || res.Removed != int(tt.wantFloor) {
				t.Errorf("Trim = %+v, want floor and removed %d", res, tt.wantFloor)
			}
			got, err := readSeqs(t, log, stream, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.wantStayed) {
				t.Errorf("read from the start %v, want %v", got, tt.wantStayed)
			}
			again, err := trim.Trim(context.Background(), stream, receivedOn(tt.cutoffDay), tt.limit)
			if err != nil || (tt.limit > len(tt.stored) && again.Removed != 0) || again.Floor < res.Floor {
				t.Errorf("Trim again = %+v, %v: want nothing more removed, the floor kept", again, err)
			}
		})
	}
}

// A read from a cursor whose next events were trimmed is refused with
// CURSOR_EXPIRED; from the floor or above it reads on; from the start it
// begins at the floor. A gap that is only a commit not visible yet, above
// the floor, still just ends the read.
func TestReadAcrossTheFloor(t *testing.T) {
	b := ddbtest.Start(t)
	log := eventstore.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{})
	trim := eventstore.Table{Client: b.Client, Name: b.Tables.Events}
	const stream = "floor-reader"
	for _, seq := range []uint64{1, 2, 3, 4, 5, 6, 8} { // 7 not visible yet
		putAt(t, b, stream, seq)
	}
	putHead(t, b, stream, 8)
	if res, err := trim.Trim(context.Background(), stream, receivedOn(4), 100); err != nil || res.Floor != 3 {
		t.Fatalf("Trim = %+v, %v; want floor 3", res, err)
	}
	tests := []struct {
		after   uint64
		want    []uint64
		expired bool
	}{
		{after: 0, want: []uint64{4, 5, 6}},
		{after: 1, expired: true},
		{after: 2, expired: true},
		{after: 3, want: []uint64{4, 5, 6}},
		{after: 5, want: []uint64{6}},
		{after: 6, want: nil},
	}
	for _, tt := range tests {
		got, err := readSeqs(t, log, stream, tt.after)
		if tt.expired {
			if !errors.Is(err, eventstore.ErrCursorExpired) || len(got) > 0 {
				t.Errorf("read after %d: %v, %v; want CURSOR_EXPIRED and nothing", tt.after, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("read after %d: %v, %v; want %v", tt.after, got, err, tt.want)
		}
	}
}

// A trim cut off after raising the floor, before deleting, is finished by
// the next one, whatever the events' age; meanwhile readers below the
// floor still read what is there.
func TestATrimCutOffIsFinishedByTheNext(t *testing.T) {
	b := ddbtest.Start(t)
	log := eventstore.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{})
	trim := eventstore.Table{Client: b.Client, Name: b.Tables.Events}
	const stream = "cut-off"
	putStream(t, b, stream, 6)
	// What a trim leaves when it stops between raising the floor to 3
	// and deleting.
	putFloor(t, b, stream, 3)
	if got, err := readSeqs(t, log, stream, 1); err != nil || !slices.Equal(got, seqRange(2, 6)) {
		t.Fatalf("read after 1 before the deletes: %v, %v", got, err)
	}
	res, err := trim.Trim(context.Background(), stream, receivedOn(0), 100) // nothing is old by time
	if err != nil || res.Floor != 3 || res.Removed != 3 {
		t.Fatalf("Trim = %+v, %v; want the floor 3 finished, 3 removed", res, err)
	}
	if got, err := readSeqs(t, log, stream, 0); err != nil || !slices.Equal(got, seqRange(4, 6)) {
		t.Fatalf("read from the start: %v, %v", got, err)
	}
	if _, err := readSeqs(t, log, stream, 1); !errors.Is(err, eventstore.ErrCursorExpired) {
		t.Fatalf("read after 1: %v, want CURSOR_EXPIRED", err)
	}
}

// While a trim deletes (its floor raised, some events at or below it still
// there, in any order), a read from the start begins above the floor: it
// never stops at a leftover, never returns an empty stream, and a cursor
// among the leftovers reads on through what is there.
func TestReadFromTheStartWhileATrimDeletes(t *testing.T) {
	b := ddbtest.Start(t)
	log := eventstore.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{})
	tests := []struct {
		name   string
		stored []uint64
		floor  uint64
		want   []uint64
	}{
		{"the first deleted, the rest not yet", []uint64{2, 3, 4, 5, 6}, 3, []uint64{4, 5, 6}},
		{"one in the middle deleted", []uint64{1, 3, 4, 5, 6}, 3, []uint64{4, 5, 6}},
		{"none deleted yet", seqRange(1, 6), 3, []uint64{4, 5, 6}},
		{"all deleted", []uint64{4, 5, 6}, 3, []uint64{4, 5, 6}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := fmt.Sprintf("deleting-%d", i)
			for _, seq := range tt.stored {
				putAt(t, b, stream, seq)
			}
			putFloor(t, b, stream, tt.floor)
			if got, err := readSeqs(t, log, stream, 0); err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("read from the start: %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// A trim stopped by its limit among the leftovers of a trim cut off
// records only those it deleted as gone, so the next trims delete the
// rest; a limit of 0 deletes and records nothing.
func TestATrimStoppedByItsLimitRecordsOnlyWhatItDeleted(t *testing.T) {
	b := ddbtest.Start(t)
	trim := eventstore.Table{Client: b.Client, Name: b.Tables.Events}
	const stream = "limited"
	putStream(t, b, stream, 8)
	putFloor(t, b, stream, 5) // cut off before deleting 1..5
	if res, err := trim.Trim(context.Background(), stream, receivedOn(0), 0); err != nil || res.Removed != 0 {
		t.Fatalf("limit 0: %+v, %v", res, err)
	}
	for _, want := range []int{2, 2, 1, 0} {
		res, err := trim.Trim(context.Background(), stream, receivedOn(0), 2) // nothing is old by time
		if err != nil || res.Removed != want || res.Floor != 5 {
			t.Fatalf("Trim = %+v, %v; want %d removed, the floor kept at 5", res, err, want)
		}
	}
	left := 0
	for _, ev := range b.StoredEvents(t) {
		if ev.Stream == stream {
			left++
			if ev.Position.Seq <= 5 {
				t.Errorf("event %d, at or below the floor, is still stored", ev.Position.Seq)
			}
		}
	}
	if left != 3 {
		t.Errorf("%d events left, want 6, 7, 8", left)
	}
}

// A trim of a stream erased meanwhile (no head) or begun again below the
// floor it would raise deletes nothing and leaves no floor: the stream's
// new events read from the start.
func TestATrimOfAnErasedStreamLeavesNoFloor(t *testing.T) {
	b := ddbtest.Start(t)
	log := eventstore.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{})
	trim := eventstore.Table{Client: b.Client, Name: b.Tables.Events}
	for name, head := range map[string]uint64{"no head": 0, "begun again": 2} {
		t.Run(name, func(t *testing.T) {
			stream := "erased-" + strings.ReplaceAll(name, " ", "-")
			for _, seq := range seqRange(1, 6) {
				putAt(t, b, stream, seq)
			}
			if head > 0 {
				putHead(t, b, stream, head) // events 3..6 are a stale read's
			}
			res, err := trim.Trim(context.Background(), stream, receivedOn(99), 100)
			if err != nil || res.Removed != 0 {
				t.Fatalf("Trim = %+v, %v; want nothing removed", res, err)
			}
			if got, err := readSeqs(t, log, stream, 0); err != nil || !slices.Equal(got, seqRange(1, 6)) {
				t.Errorf("read from the start: %v, %v", got, err)
			}
		})
	}
}
