package simulation_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// spaceCall sends a request to path of a space, as user, retrying a 503
// under the same key as a client does.
func spaceCall(t testing.TB, hs *apitest.Harness, method, path, user, body string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	key := uuid.NewString()
	for attempt := 0; ; attempt++ {
		resp := hs.Call(method, path, user, key, body)
		if resp.StatusCode != 503 || attempt > 20 {
			return resp
		}
	}
}

// listed is one event of a space's pull.
// pullSpace drains the space as user, failing the test on a refusal.
func pullSpace(t *testing.T, hs *apitest.Harness, spaceID, user string) []apitest.ListedEvent {
	t.Helper()
	evs, _, last := hs.Walk("/api/v1/spaces/"+spaceID+"/events", user, "", 1000)
	if last.StatusCode != 200 {
		t.Fatalf("%s's pull: %d %s", user, last.StatusCode, last.Body)
	}
	return evs
}

// membership is the payload of a membership change.
func membership(t *testing.T, ev apitest.ListedEvent) eventstore.MembershipPayload {
	t.Helper()
	var p eventstore.MembershipPayload
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNoWriteOfARemovedMemberCommitsAfterTheRemoval is the membership
// race's checker: four writers of a space post all the while, over three
// execution environments, every transaction held back at the transport
// for up to 100 ms between being built and being sent, while the owner
// removes one of them. The space's stream orders the removal with the
// events (it is an event itself), so: no event of the removed writer may
// come after the removal; every remaining member's pull must show the same
// events in the same order; every write answered 201 must be listed
// exactly once, and nothing else. A role check made before the
// transaction, rather than in it, lets a write checked before the removal
// commit after it, which the holds here make likely.
//
// It runs on both write paths: every write at the head, and the
// busy-space path (apitest.NewSequenced), where writes found contended
// are accepted and a sequencer places them; there a removal must wait for
// the removed writer's accepted events to be placed.
func TestNoWriteOfARemovedMemberCommitsAfterTheRemoval(t *testing.T) {
	for _, path := range []struct {
		name string
		new  func(testing.TB) *apitest.Harness
	}{{"head", apitest.New}, {"sequenced", apitest.NewSequenced}} {
		t.Run(path.name, func(t *testing.T) {
			hs := path.new(t)
			removalRace(t, hs)
			if path.name == "sequenced" && hs.Sequenced() == 0 {
				t.Error("no write was accepted and sequenced: the busy-space path was not taken")
			}
			t.Logf("%d events placed by the sequencer", hs.Sequenced())
		})
	}
}

func removalRace(t *testing.T, hs *apitest.Harness) {
	envs := hs.Environments(3)
	spaceID := uuid.NewString()
	const owner, removed = "owner", "w0"
	writers := []string{removed, "w1", "w2", "w3"}
	if resp := spaceCall(t, hs, "POST", api.SpacesPath, owner, `{"id":"`+spaceID+`","name":"race"}`); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	members := "/api/v1/spaces/" + spaceID + "/members"
	for _, w := range writers {
		if resp := spaceCall(t, hs, "POST", members, owner, `{"member":"`+w+`","role":"writer"}`); resp.StatusCode != 201 {
			t.Fatalf("add %s: %d %s", w, resp.StatusCode, resp.Body)
		}
	}
	hs.B.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.Delayed, Delay: 100 * time.Millisecond, Times: 1 << 30})

	var answered sync.Map // event id → its writer, for every 201
	var refusedAfter, removedAnswered atomic.Int64
	var stop atomic.Bool
	var writing sync.WaitGroup
	for wi, w := range writers {
		for e := range envs {
			writing.Go(func() {
				for i := 0; !stop.Load(); i++ {
					id := uuid.NewString()
					resp := spaceCall(t, envs[(e+i)%len(envs)], "POST", "/api/v1/spaces/"+spaceID+"/events", w, apitest.EventBody(t, id))
					switch {
					case resp.StatusCode == 201:
						answered.Store(id, w)
						if w == removed {
							removedAnswered.Add(1)
						}
					case resp.StatusCode == 403 && w == removed && strings.Contains(resp.Body, "SPACE_NOT_MEMBER"):
						refusedAfter.Add(1)
						return
					default:
						t.Errorf("writer %d in environment %d: %d %s", wi, e, resp.StatusCode, resp.Body)
						return
					}
				}
			})
		}
	}
	// The removal goes in once the removed writer has had a write answered
	// and the writers are busy: on a slow machine a fixed wait can end
	// before that writer wins a single commit, and the race is not run.
	for deadline := time.Now().Add(30 * time.Second); removedAnswered.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if resp := spaceCall(t, envs[0], "DELETE", members+"/"+removed, owner, ""); resp.StatusCode != 200 {
		t.Errorf("remove: %d %s", resp.StatusCode, resp.Body)
	}
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	writing.Wait()
	hs.B.Transport.Reset()
	hs.Settle()

	// One order for every remaining member.
	views := map[string][]apitest.ListedEvent{}
	for _, m := range append([]string{owner}, writers[1:]...) {
		views[m] = pullSpace(t, hs, spaceID, m)
	}
	stream := views[owner]
	for m, v := range views {
		if fmt.Sprint(v) != fmt.Sprint(stream) {
			t.Fatalf("%s's pull differs from the owner's", m)
		}
	}

	removal, before, after := -1, 0, 0
	seen := map[string]int{}
	for i, ev := range stream {
		seen[ev.ID]++
		switch {
		case ev.Type == "space.member_removed" && membership(t, ev).Member == removed:
			removal = i
			if role := membership(t, ev).Role; role != "writer" {
				t.Errorf("the removal's payload gives the role %q, want the writer's", role)
			}
		case ev.Author == removed && removal < 0:
			before++
		case ev.Author == removed:
			after++
			t.Errorf("event %s of the removed writer is at position %d, after the removal at %d", ev.ID, i, removal)
		}
	}
	if removal < 0 {
		t.Fatal("no removal in the space's stream")
	}
	listedWrites := 0
	answered.Range(func(id, _ any) bool {
		if seen[id.(string)] != 1 {
			t.Errorf("answered event %s is listed %d times", id, seen[id.(string)])
		}
		listedWrites++
		return true
	})
	if system := 1 + len(writers) + 1; len(stream) != listedWrites+system {
		t.Errorf("%d events listed; %d writes answered 201 and %d membership changes", len(stream), listedWrites, system)
	}
	if before == 0 || refusedAfter.Load() == 0 {
		t.Errorf("the race did not happen: %d writes of the removed writer before the removal, %d refused after", before, refusedAfter.Load())
	}
	t.Logf("%s: %d events; the removed writer's: %d before the removal, %d after, %d refused after", hs.B.Name, len(stream), before, after, refusedAfter.Load())
}

// TestAWriterWithAcceptedEventsStaysOnTheBusyPath: in a busy space (the
// busy-space path on, nothing sequencing, so accepted events stay
// pending), a writer whose accepted events wait, writing through an
// environment that has not seen the space busy, is refused at the head by
// their own pending count. That write is accepted at once, two calls in
// all (no read of their member item), and the environment then counts the
// space busy: the writer's next write there is one call, an accept. A
// non-member's write is still refused as such.
func TestAWriterWithAcceptedEventsStaysOnTheBusyPath(t *testing.T) {
	hs := apitest.NewAccepting(t)
	envs := hs.Environments(3)
	spaceID := uuid.NewString()
	if resp := spaceCall(t, hs, "POST", api.SpacesPath, "owner", `{"id":"`+spaceID+`","name":"busy"}`); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := spaceCall(t, hs, "POST", "/api/v1/spaces/"+spaceID+"/members", "owner", `{"member":"w","role":"writer"}`); resp.StatusCode != 201 {
		t.Fatalf("add: %d %s", resp.StatusCode, resp.Body)
	}
	path := "/api/v1/spaces/" + spaceID + "/events"
	for _, step := range []struct {
		name   string
		env    int
		user   string
		status int
		calls  int // a refusal's: at most (its reads vary by backend)
	}{
		{"at the head, in the environment that made the space", 0, "w", 201, 1},
		{"accepted: the head moved since the environment saw it", 1, "w", 201, 2},
		{"refused at the head by the writer's pending event, accepted", 2, "w", 201, 2},
		{"the environment now counts the space busy: an accept", 2, "w", 201, 1},
		{"and again", 2, "w", 201, 1},
		{"a non-member, refused", 2, "stranger", 403, 3},
	} {
		env := envs[step.env]
		if step.env == 0 {
			env = hs // the environment that created the space knows its head
		}
		resp := spaceCall(t, env, "POST", path, step.user, apitest.EventBody(t, uuid.NewString()))
		m, _ := env.LastMetrics(t)
		if resp.StatusCode != step.status || m.DynamoDBCalls > step.calls || step.status == 201 && m.DynamoDBCalls != step.calls {
			t.Fatalf("%s: %d in %d calls (%s); want %d in %d", step.name, resp.StatusCode, m.DynamoDBCalls, resp.Body, step.status, step.calls)
		}
	}
	if hs.Accepts() != 4 {
		t.Fatalf("%d writes accepted, want 4", hs.Accepts())
	}
}

// BenchmarkOneSpaceMembersAtOnce is one space's write throughput: 1 to 32
// members, each a writer in an environment of their own, posting at once,
// every DynamoDB call held up to 8 ms (a round trip's order). The space's
// head serialises its commits as one user's head serialises theirs
// (BenchmarkOneUserDevicesAtOnce): its events/s is the figure to compare.
// Midway, with two members or more, the owner removes the first writer
// and adds them back, as a busy space's membership changes: removal-ms is
// the time the removal took to be answered (it waits for that writer's
// accepted events to be placed), with a client's retries.
//
// path=head is every write at the head; path=sequenced the busy-space
// path (apitest.NewSequenced): writes found contended are accepted, and
// the sequencer's calls are counted with the writers'. Run sustained
// (-args -sustain 30s, make bench-space) to cross every window the
// busy-space path has.
func BenchmarkOneSpaceMembersAtOnce(b *testing.B) {
	for _, path := range []struct {
		name string
		new  func(testing.TB) *apitest.Harness
	}{{"head", apitest.New}, {"sequenced", apitest.NewSequenced}} {
		for _, members := range []int{1, 2, 4, 8, 16, 32} {
			b.Run(fmt.Sprintf("path=%s/members=%d", path.name, members), func(b *testing.B) {
				oneSpaceMembersAtOnce(b, path.new(b), members)
			})
		}
	}
}

func oneSpaceMembersAtOnce(b *testing.B, hs *apitest.Harness, members int) {
	envs := hs.Environments(members)
	spaceID := uuid.NewString()
	if resp := spaceCall(b, hs, "POST", api.SpacesPath, "owner", `{"id":"`+spaceID+`","name":"bench"}`); resp.StatusCode != 201 {
		b.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	membersPath := "/api/v1/spaces/" + spaceID + "/members"
	add := func(m int) {
		body := fmt.Sprintf(`{"member":"m%d","role":"writer"}`, m)
		if resp := clientCall(b, hs, "POST", membersPath, "owner", body); resp.StatusCode != 201 {
			b.Fatalf("add: %d %s", resp.StatusCode, resp.Body)
		}
	}
	for m := range members {
		add(m)
	}
	hs.B.Transport.Reset() // count the writes' calls only
	hs.B.Transport.Inject(ddbtest.Fault{Kind: ddbtest.Delayed, Delay: 8 * time.Millisecond, Times: 1 << 30})
	path := "/api/v1/spaces/" + spaceID + "/events"
	// Midway, m0 is removed and added back: until then its refusals as a
	// non-member wait, and the same request is sent again.
	back := make(chan struct{})
	var removal time.Duration
	var midway func() int
	if members > 1 {
		midway = func() int {
			start := time.Now()
			if resp := clientCall(b, hs, "DELETE", membersPath+"/m0", "owner", ""); resp.StatusCode != 200 {
				b.Errorf("remove: %d %s", resp.StatusCode, resp.Body)
			}
			removal = time.Since(start)
			add(0)
			close(back)
			return 2 // the removal and the add, listed
		}
	}
	writersAtOnce(b, hs, envs, path, "owner", func(m int, env *apitest.Harness) (events.APIGatewayV2HTTPResponse, string) {
		id := uuid.NewString()
		key, body, user := uuid.NewString(), apitest.EventBody(b, id), fmt.Sprintf("m%d", m)
		for {
			resp := clientCall(b, env, "POST", path, user, body, key)
			if m != 0 || resp.StatusCode != 403 || !strings.Contains(resp.Body, "SPACE_NOT_MEMBER") {
				return resp, id
			}
			<-back
		}
	}, midway)
	hs.Settle()
	if n := hs.Sequenced(); n > 0 {
		b.ReportMetric(float64(n), "sequenced")
	}
	if removal > 0 {
		b.ReportMetric(float64(removal.Microseconds())/1000, "removal-ms")
	}
}

// clientCall sends a request as a client does: under one key (key, or a
// new one), again after each 503, 5 ms later (a Retry-After scaled down),
// for up to 10 s.
func clientCall(b *testing.B, hs *apitest.Harness, method, path, user, body string, key ...string) events.APIGatewayV2HTTPResponse {
	k := uuid.NewString()
	if len(key) > 0 {
		k = key[0]
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp := hs.Call(method, path, user, k, body)
		if resp.StatusCode != 503 || time.Now().After(deadline) {
			return resp
		}
		time.Sleep(5 * time.Millisecond)
	}
}
