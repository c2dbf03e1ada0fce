package simulation_test

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// TestPullersMissNothingWhileWritersCommitLate is a second device syncing
// while others write: four devices of one user post 40 events each,
// spread over three execution environments, with every transaction held
// back at the transport for up to 200 ms between being built and being
// sent, so that commits land in another order than the requests came. Three
// pullers in their own environments sync all the while, each resuming from
// the cursor of its last page. None may miss an event or see one twice,
// and all must see one order; then a device resuming from any cursor any of
// them was given must read exactly the events after it.
//
// It runs on each target: the user's own stream, and a space whose four
// members write it, at the head and on the busy-space path (where the
// holds delay accepts, and a sequencer places them).
func TestPullersMissNothingWhileWritersCommitLate(t *testing.T) {
	for _, tc := range targets() {
		t.Run(tc.name, func(t *testing.T) { pullersMissNothing(t, tc.make(t, 4)) })
	}
}

func pullersMissNothing(t *testing.T, tg target) {
	const devices, perDevice, pullers = 4, 40, 3
	hs := tg.hs
	envs := hs.Environments(3)
	const maxHold = 200 * time.Millisecond
	hs.B.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.Delayed, Delay: maxHold, Times: 1 << 30})

	var sent sync.Map
	var writing sync.WaitGroup
	for d := range devices {
		writing.Go(func() {
			for i := range perDevice {
				id, key := uuid.NewString(), uuid.NewString()
				for attempt := 0; ; attempt++ {
					resp := tg.post(envs[(d+i+attempt)%len(envs)], d, key, apitest.EventBody(t, id))
					if resp.StatusCode == 201 {
						break
					}
					if resp.StatusCode != 503 || attempt > 20 {
						t.Errorf("device %d event %d: %d %s", d, i, resp.StatusCode, resp.Body)
						return
					}
				}
				sent.Store(id, true)
			}
		})
	}
	var done atomic.Bool
	streams := make([][]string, pullers)
	handed := make([][]string, pullers)
	var pulling sync.WaitGroup
	for p := range pullers {
		device := hs.NewEnvironment()
		pulling.Go(func() {
			cursor := ""
			for {
				finished := done.Load() // read before the pull: a pull after the writers' end is the last
				ids, cursors, last := tg.pull(device, cursor, 7)
				if last.StatusCode != 200 {
					t.Errorf("puller %d: %d %.300s", p, last.StatusCode, last.Body)
					return
				}
				streams[p] = append(streams[p], ids...)
				handed[p] = append(handed[p], cursors...)
				cursor = cursors[len(cursors)-1]
				if finished {
					return
				}
				time.Sleep(3 * time.Millisecond)
			}
		})
	}
	writing.Wait()
	hs.Settle() // on the busy-space path, every accepted event placed
	done.Store(true)
	pulling.Wait()

	all, _, _ := tg.pull(hs, "", 1000)
	stored := 0
	sent.Range(func(id, _ any) bool {
		if slices.Contains(all, id.(string)) {
			stored++
		}
		return true
	})
	if len(all) != tg.before+devices*perDevice || stored != devices*perDevice {
		t.Fatalf("listed %d events from the start, %d of those sent; want %d and %d", len(all), stored, tg.before+devices*perDevice, devices*perDevice)
	}
	for p, stream := range streams {
		if !slices.Equal(stream, all) {
			t.Fatalf("puller %d read %d events, the listing has %d: %s", p, len(stream), len(all), firstDifference(stream, all))
		}
	}
	// Every cursor any puller was handed, resumed from by a new device.
	resumed := map[string]bool{}
	for _, cursors := range handed {
		for _, c := range cursors {
			if resumed[c] {
				continue
			}
			resumed[c] = true
			pos, err := syncevent.ParseCursor(c)
			if err != nil || pos.IsLegacy() || pos.Seq > uint64(len(all)) {
				t.Fatalf("cursor %q: %+v, %v", c, pos, err)
			}
			if got, _, _ := tg.pull(hs, c, 50); !slices.Equal(got, all[pos.Seq:]) {
				t.Fatalf("from cursor %s: %s", c, firstDifference(got, all[pos.Seq:]))
			}
		}
	}
	// The claim is that commits landed in another order than the requests
	// came, because of the transport's holds. Each event's receivedAt is
	// stamped when its request is executed, before the commit; its
	// position is its place in commit order. An event committed after one
	// received later is an inversion, as deep as the later one is later.
	// Four devices at once already invert some by their conflicts and
	// retries (measured without the holds: about 55 of 160, by at most
	// 50 to 75 ms); the holds invert them by much more (about 1 s, a hold
	// of up to 200 ms on each attempt). So at least one inversion deeper
	// than the longest hold is required: the margin is about 5x above
	// what the holds give and 3x above what conflicts alone give. On the
	// busy-space path nothing retries: a held accept is placed after those
	// accepted behind it by at most its own hold (measured: 165 to 274 ms
	// with the holds, 11 to 21 ms without), so half the hold is required.
	want := maxHold
	if tg.busy {
		want = maxHold / 2
	}
	inverted, deepest := 0, time.Duration(0)
	var latest time.Time
	for _, ev := range storedInCommitOrder(t, hs, tg.stream) {
		if ev.ReceivedAt.Before(latest) {
			inverted++
			deepest = max(deepest, latest.Sub(ev.ReceivedAt))
		}
		latest = maxTime(latest, ev.ReceivedAt)
	}
	t.Logf("%d events, %d pullers, %d distinct cursors resumed from; %d events committed after one received later, by up to %v; %d placed by the sequencer", len(all), pullers, len(resumed), inverted, deepest, hs.Sequenced())
	if inverted == 0 || deepest < want {
		t.Fatalf("%d events committed after one received later, by up to %v: the holds (up to %v) did not reorder the commits", inverted, deepest, maxHold)
	}
	tg.checkPath(t)
}

// storedInCommitOrder is user's stored events by position.
func storedInCommitOrder(t *testing.T, hs *apitest.Harness, user string) []syncevent.Event {
	var evs []syncevent.Event
	for _, ev := range hs.B.StoredEvents(t) {
		if ev.Stream == user {
			evs = append(evs, ev)
		}
	}
	slices.SortFunc(evs, func(a, b syncevent.Event) int { return cmp.Compare(a.Position.Seq, b.Position.Seq) })
	return evs
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// firstDifference says where got first departs from want.
func firstDifference(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d: %s, want %s", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d events against %d", len(got), len(want))
}

// storeLegacy writes an event as the service stored it before sequence
// numbers: its received_key the receive time and id. It returns the
// cursor the service handed out for it then (receive time in ms and id,
// base64url).
func storeLegacy(hs *apitest.Harness, user, id string, received time.Time) string {
	hs.T.Helper()
	at := received.UTC().Format(syncevent.TimestampLayout)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err := hs.B.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(hs.B.Tables.Events),
		Item: map[string]types.AttributeValue{
			"user_id": s(user), "event_id": s(id), "received_key": s(at + "#" + id), "type": s("note.created"),
			"occurred_at": s("2026-12-02T14:03:00Z"), "received_at": s(at), "payload": s(`{"title":"Groceries"}`),
		},
	})
	if err != nil {
		hs.T.Fatal(err)
	}
	return legacyCursor(received, uuid.MustParse(id))
}

// TestEventsAndCursorsFromBeforeSequenceNumbers: events stored before
// sequence numbers come first, in their old order (receive time, then id),
// then every later event in commit order; a cursor handed out before
// resumes where it was, through the old events and on into the new.
func TestEventsAndCursorsFromBeforeSequenceNumbers(t *testing.T) {
	hs := apitest.New(t)
	const user = "returning"
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var legacy, legacyCursors []string
	for i := range 5 {
		id := uuid.NewString()
		legacy = append(legacy, id)
		legacyCursors = append(legacyCursors, storeLegacy(hs, user, id, t0.Add(time.Duration(i)*time.Second)))
	}
	var fresh []string
	for range 4 {
		id := uuid.NewString()
		apitest.WantResponse(t, hs.Post(user, uuid.NewString(), apitest.EventBody(t, id)), 201, "")
		fresh = append(fresh, id)
	}
	all := append(slices.Clone(legacy), fresh...)
	if got, _ := hs.Drain(user, "", 2); !slices.Equal(got, all) {
		t.Fatalf("from the start: %s", firstDifference(got, all))
	}
	for i, c := range legacyCursors {
		got, cursors := hs.Drain(user, c, 3)
		if !slices.Equal(got, all[i+1:]) {
			t.Fatalf("from the legacy cursor of event %d: %s", i, firstDifference(got, all[i+1:]))
		}
		if last := cursors[len(cursors)-1]; last != syncevent.At(uint64(len(fresh))).Cursor() {
			t.Fatalf("from the legacy cursor of event %d the last page resumes at %s", i, last)
		}
	}
	// A legacy cursor between two old events (a time no event has, the
	// smallest id).
	between, _ := hs.Drain(user, legacyCursor(t0.Add(1500*time.Millisecond), uuid.Nil), 10)
	if !slices.Equal(between, all[2:]) {
		t.Fatalf("from between old events: %s", firstDifference(between, all[2:]))
	}
}

// legacyCursor is the cursor the service handed out, before sequence
// numbers, for the event received at with id: 24 bytes, base64url.
func legacyCursor(at time.Time, id uuid.UUID) string {
	var b [24]byte
	binary.BigEndian.PutUint64(b[:8], uint64(at.UnixMilli()))
	copy(b[8:], id[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
