package api_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// streamPage is a GET page as a syncing device reads it.
type streamPage struct {
	Events  []listedEvent `json:"events"`
	Cursor  string        `json:"cursor"`
	HasMore bool          `json:"hasMore"`
}

// pull reads one page after cursor ("" for the start).
func (hs *harness) pull(user, cursor string, limit int) streamPage {
	hs.t.Helper()
	q := map[string]string{"limit": fmt.Sprint(limit)}
	if cursor != "" {
		q["cursor"] = cursor
	}
	resp := hs.get(user, q)
	if resp.StatusCode != 200 {
		hs.t.Errorf("pull: %d %.300s", resp.StatusCode, resp.Body)
		return streamPage{Cursor: cursor}
	}
	var p streamPage
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		hs.t.Fatal(err)
	}
	return p
}

// drain pulls from cursor until no more pages follow now, and returns the
// ids read and the cursors handed out on the way.
func (hs *harness) drain(user, cursor string, limit int) (ids, cursors []string) {
	for {
		p := hs.pull(user, cursor, limit)
		for _, ev := range p.Events {
			ids = append(ids, ev.ID)
		}
		cursor = p.Cursor
		cursors = append(cursors, cursor)
		if !p.HasMore {
			return ids, cursors
		}
	}
}

// TestPullersMissNothingWhileWritersCommitLate is a second device syncing
// while others write: four devices of one user post 40 events each,
// spread over three execution environments, with every transaction held
// back at the transport for up to 200 ms between being built and being
// sent, so that commits land in another order than the requests came. Three
// pullers in their own environments sync all the while, each resuming from
// the cursor of its last page. None may miss an event or see one twice,
// and all must see one order; then a device resuming from any cursor any of
// them was given must read exactly the events after it.
func TestPullersMissNothingWhileWritersCommitLate(t *testing.T) {
	const (
		devices, perDevice, pullers = 4, 40, 3
		user                        = "streamer"
	)
	hs := newHarness(t)
	envs := hs.environments(3)
	hs.b.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.Delayed, Delay: 200 * time.Millisecond, Times: 1 << 30})

	var sent sync.Map
	var writing sync.WaitGroup
	for d := range devices {
		writing.Go(func() {
			for i := range perDevice {
				id, key := uuid.NewString(), uuid.NewString()
				for attempt := 0; ; attempt++ {
					resp := envs[(d+i+attempt)%len(envs)].post(user, key, eventBody(t, id))
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
		device := hs.newEnvironment()
		pulling.Go(func() {
			cursor := ""
			for {
				finished := done.Load() // read before the pull: a pull after the writers' end is the last
				ids, cursors := device.drain(user, cursor, 7)
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
	done.Store(true)
	pulling.Wait()

	all, _ := hs.drain(user, "", 1000)
	stored := 0
	sent.Range(func(id, _ any) bool {
		if slices.Contains(all, id.(string)) {
			stored++
		}
		return true
	})
	if len(all) != devices*perDevice || stored != devices*perDevice {
		t.Fatalf("listed %d events from the start, %d of those sent; want %d", len(all), stored, devices*perDevice)
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
			if got, _ := hs.drain(user, c, 50); !slices.Equal(got, all[pos.Seq:]) {
				t.Fatalf("from cursor %s: %s", c, firstDifference(got, all[pos.Seq:]))
			}
		}
	}
	t.Logf("%d events, %d pullers, %d distinct cursors resumed from", len(all), pullers, len(resumed))
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
