package simulation_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// read is an event as a puller read it: its id and its position (the
// cursor of its page of one).
type read struct {
	id  string
	pos uint64
}

// walkOne pages tg's stream from cursor one event a page, from hs: what
// it read, with positions, every cursor handed out, and the status it
// ended on.
func walkOne(t *testing.T, hs *apitest.Harness, tg target, cursor string) ([]read, []string, int) {
	t.Helper()
	evs, cursors, last := hs.Walk(tg.path, tg.reader, cursor, 1)
	out := make([]read, len(evs))
	for i, ev := range evs {
		pos, err := syncevent.ParseCursor(cursors[i])
		if err != nil {
			t.Fatalf("cursor %q: %v", cursors[i], err)
		}
		out[i] = read{ev.ID, pos.Seq}
	}
	return out, cursors, last.StatusCode
}

// TestPullersMissNothingWhileRetentionTrims is the pull's promise under
// retention: three devices of one user post 25 events each over three
// environments, every transaction held at the transport for up to 200 ms,
// while a trimmer removes all but the newest events, a few at a time, and
// two pullers (one quick, one pausing until the floor has passed it) sync
// all the while, starting over
// from the start whenever they are told CURSOR_EXPIRED. Within each start
// of a puller, the events come at consecutive positions, each once; one
// id is always at one position, for every puller and the final listing;
// the final listing is the positions above the floor up to the head, the
// newest event among them, and the events below the floor are exactly the
// rest of those answered 201. Then every cursor handed out is resumed
// from: below the floor it is refused 410 and nothing else, at or above it
// it reads exactly the listed events after it.
//
// It runs on each target: the user's own stream, and a space whose three
// members write it, at the head and on the busy-space path.
func TestPullersMissNothingWhileRetentionTrims(t *testing.T) {
	for _, tc := range targets() {
		t.Run(tc.name, func(t *testing.T) { pullersMissNothingTrimmed(t, tc.make(t, 3)) })
	}
}

func pullersMissNothingTrimmed(t *testing.T, tg target) {
	const devices, perDevice = 3, 25
	hs := tg.hs
	envs := hs.Environments(3)
	hs.B.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.Delayed, Delay: 200 * time.Millisecond, Times: 1 << 30})
	trimmer := eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}

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
	var trimming atomic.Bool
	var trimmedTo atomic.Uint64 // the floor after the trimmer's last trim
	trimDone := make(chan struct{})
	go func() {
		defer close(trimDone)
		for !trimming.Load() {
			// Everything received up to now may go, 5 events a trim.
			res, err := trimmer.Trim(context.Background(), tg.stream, time.Now(), 5)
			if err != nil {
				t.Errorf("trim: %v", err)
				return
			}
			trimmedTo.Store(res.Floor)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// The slow puller pauses until the floor has passed its cursor (or
	// the trimmer has stopped): however a loaded machine spreads the
	// placements, it then pulls from below the floor whenever events came
	// after its last pull.
	pauseSlow := func(cursor string) {
		pos, err := syncevent.ParseCursor(cursor)
		if err != nil || pos.IsStart() {
			time.Sleep(400 * time.Millisecond)
			return
		}
		for trimmedTo.Load() <= pos.Seq {
			select {
			case <-trimDone:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}

	var done atomic.Bool
	lives := make([][][]read, 2) // per puller, per start
	handed := make([][]string, 2)
	restarts := make([]int, 2)
	var startedOver atomic.Int64 // restarts, as the main goroutine may read them
	var pulling sync.WaitGroup
	pauses := []func(string){func(string) { time.Sleep(3 * time.Millisecond) }, pauseSlow}
	for p, pause := range pauses {
		device := hs.NewEnvironment()
		pulling.Go(func() {
			cursor, life := "", []read(nil)
			for {
				finished := done.Load() // read before the pull: a pull after the end is the last
				got, cursors, status := walkOne(t, device, tg, cursor)
				life, handed[p] = append(life, got...), append(handed[p], cursors...)
				switch status {
				case 410:
					lives[p], life, cursor = append(lives[p], life), nil, ""
					restarts[p]++
					startedOver.Add(1)
					continue // start over, at once
				case 200:
				default:
					t.Errorf("puller %d: %d", p, status)
					return
				}
				if len(cursors) > 0 {
					cursor = cursors[len(cursors)-1]
				}
				if finished {
					lives[p] = append(lives[p], life)
					return
				}
				pause(cursor)
			}
		})
	}
	writing.Wait()
	hs.Settle() // on the busy-space path, every accepted event placed
	// On the busy-space path a loaded machine may place most events only
	// now: retention goes on trimming beside the pullers until one of
	// them has had to start over, or for 3 s, so that the race this test
	// is about can happen after the last placement too.
	for deadline := time.Now().Add(3 * time.Second); startedOver.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	trimming.Store(true)
	<-trimDone
	done.Store(true)
	pulling.Wait()

	all, _, status := walkOne(t, hs, tg, "")
	if status != 200 || len(all) == 0 {
		t.Fatalf("the final listing: %d, %d events", status, len(all))
	}
	head, floor := uint64(tg.before+devices*perDevice), all[0].pos-1
	if all[len(all)-1].pos != head || floor == 0 {
		t.Fatalf("the listing holds positions %d to %d; want the newest, %d, and a floor above 0", all[0].pos, all[len(all)-1].pos, head)
	}

	// One id at one position, everywhere; consecutive positions, each
	// once, within every start of every puller and in the listing.
	at := map[string]uint64{}
	idAt := map[uint64]string{}
	check := func(who string, seq []read) {
		for i, r := range seq {
			if i > 0 && r.pos != seq[i-1].pos+1 {
				t.Fatalf("%s: position %d after %d", who, r.pos, seq[i-1].pos)
			}
			if p, ok := at[r.id]; ok && p != r.pos {
				t.Fatalf("%s: event %s at %d, elsewhere at %d", who, r.id, r.pos, p)
			}
			if id, ok := idAt[r.pos]; ok && id != r.id {
				t.Fatalf("%s: position %d holds %s, elsewhere %s", who, r.pos, r.id, id)
			}
			at[r.id], idAt[r.pos] = r.pos, r.id
		}
	}
	check("the listing", all)
	for p := range lives {
		for l, life := range lives[p] {
			check(fmt.Sprintf("puller %d, start %d", p, l), life)
		}
		last := lives[p][len(lives[p])-1]
		if len(last) == 0 && len(lives[p]) > 1 || len(last) > 0 && last[len(last)-1].pos != head {
			t.Errorf("puller %d's last start does not reach the head", p)
		}
	}

	// Below the floor are exactly the answered events not listed, and
	// those of the events before the writes (a space's creation and adds)
	// not listed.
	answered, listed := 0, 0
	sent.Range(func(id, _ any) bool {
		answered++
		if p, ok := at[id.(string)]; ok && p > floor {
			listed++
		}
		return true
	})
	beforeListed := len(all) - listed
	if answered+tg.before != int(head) || beforeListed < 0 || beforeListed > tg.before ||
		uint64(answered-listed+tg.before-beforeListed) != floor {
		t.Errorf("%d answered 201, %d of them listed above the floor %d; the listing has %d", answered, listed, floor, len(all))
	}

	// Every cursor handed out, resumed from.
	refused := 0
	resumed := map[string]bool{}
	for _, cursors := range handed {
		for _, c := range cursors {
			if resumed[c] {
				continue
			}
			resumed[c] = true
			pos, _ := syncevent.ParseCursor(c)
			got, _, status := walkOne(t, hs, tg, c)
			switch {
			case pos.IsStart():
				if status != 200 || !slices.Equal(got, all) {
					t.Errorf("from the start: %d, %d events, want the %d listed", status, len(got), len(all))
				}
			case pos.Seq < floor:
				if status != 410 || len(got) > 0 {
					t.Errorf("from %d, below the floor %d: %d and %d events, want 410 and none", pos.Seq, floor, status, len(got))
				}
				refused++
			case status != 200 || !slices.Equal(got, all[pos.Seq-floor:]):
				t.Errorf("from %d: %d, %d events, want the %d listed after it", pos.Seq, status, len(got), len(all[pos.Seq-floor:]))
			}
		}
	}
	if refused == 0 || restarts[0]+restarts[1] == 0 {
		t.Errorf("the race did not happen: %d cursors below the final floor, %v starts over", refused, restarts)
	}
	t.Logf("%s: floor %d of %d; pullers started over %v times; %d cursors resumed, %d refused; %d placed by the sequencer", hs.B.Name, floor, head, restarts, len(resumed), refused, hs.Sequenced())
	tg.checkPath(t)
}
