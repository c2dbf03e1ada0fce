package api_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
)

// TestOneUsersFloodIsTheirsAlone: a user flooding the API with mutations
// and pulls from two execution environments gets 429 RATE_LIMITED with a
// Retry-After, and nothing of a refused mutation is stored or recorded;
// another user writing and pulling in the same run is never refused. A
// refused mutation costs no DynamoDB call, an accepted one still one, and
// a refused key, sent again once Retry-After has passed, is stored.
func TestOneUsersFloodIsTheirsAlone(t *testing.T) {
	const rate, burst, floods = 2, 4, 30
	hs := apitest.NewLimited(t, rate, burst, rate, burst)
	envs := hs.Environments(2)
	flooder, calm := "flood-"+uuid.NewString(), "calm-"+uuid.NewString()

	type answer struct {
		status               int
		code, retryAfter     string
		key, id, body, which string
	}
	var mu sync.Mutex
	var answers []answer
	record := func(a answer) {
		mu.Lock()
		defer mu.Unlock()
		answers = append(answers, a)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range floods {
		wg.Go(func() {
			env := envs[i%len(envs)]
			key, id := uuid.NewString(), uuid.NewString()
			body := apitest.EventBody(t, id)
			x := env.Send(&apitest.Recorder{}, flooder, key, id, body)
			resp := env.Get(flooder, nil)
			record(answer{x.Status, x.Code, "", key, id, body, "post"})
			record(answer{resp.StatusCode, "", resp.Headers["Retry-After"], "", "", resp.Body, "get"})
		})
		// The calm user writes and pulls in the midst of the flood, in
		// both environments, within their own burst: every request of
		// theirs must succeed.
		if i%(floods/burst) == 1 && i/(floods/burst) < burst {
			wg.Go(func() {
				env := envs[i%len(envs)]
				post := env.Post(calm, uuid.NewString(), apitest.EventBody(t, uuid.NewString()))
				get := env.Get(calm, nil)
				record(answer{post.StatusCode, "", "", "", "", post.Body, "calm post"})
				record(answer{get.StatusCode, "", "", "", "", get.Body, "calm get"})
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	var stored, refused, readsRefused, calmAnswered int
	var retry answer
	for _, a := range answers {
		switch {
		case a.which == "post" && a.status == 201:
			stored++
		case a.which == "post" && a.status == 429 && a.code == string(errcode.RateLimited):
			refused++
			retry = a
		case a.which == "get" && a.status == 429:
			readsRefused++
			if n, err := strconv.Atoi(a.retryAfter); err != nil || n < 1 {
				t.Errorf("a refused read's Retry-After %q", a.retryAfter)
			}
		case a.which == "get" && a.status == 200:
		case a.which == "calm post" && a.status == 201, a.which == "calm get" && a.status == 200:
			calmAnswered++
		default:
			t.Errorf("%s: %d %s", a.which, a.status, a.body)
		}
	}
	t.Logf("%d mutations of the flooder: %d stored, %d refused; %d of %d reads refused", floods, stored, refused, readsRefused, floods)
	// The mutations' bucket is the head's, whatever the environment: the
	// two together store at most the burst and what came back meanwhile.
	if most := burst + int(elapsed.Seconds()*rate) + 1; refused == 0 || readsRefused == 0 || stored > most {
		t.Fatalf("the flood was not held: %d stored, %d mutations and %d reads refused", stored, refused, readsRefused)
	}
	if got := len(hs.Stored()[flooder]); got != stored {
		t.Fatalf("%d of the flooder's events stored, %d answered 201", got, stored)
	}
	if calmAnswered != 2*burst {
		t.Fatalf("%d of the calm user's %d requests succeeded", calmAnswered, 2*burst)
	}
	if got := len(hs.Stored()[calm]); got != burst {
		t.Fatalf("%d of the calm user's events stored, want %d", got, burst)
	}
	if hs.LedgerCount() != stored+burst {
		t.Fatalf("%d ledger records for %d stored mutations: a refusal was recorded", hs.LedgerCount(), stored+burst)
	}

	// What the limit costs: a refusal no call, an accepted mutation one.
	// The first refusal in an environment whose view of the head is stale
	// follows the one call that finds the real head; the next costs none.
	env := envs[0]
	floodUntilRefused(t, env, flooder, 4*burst)
	wait := floodUntilRefused(t, env, flooder, 1)
	if m, _ := env.LastMetrics(t); m.DynamoDBCalls != 0 {
		t.Fatalf("a refused mutation made %d DynamoDB calls", m.DynamoDBCalls)
	}
	time.Sleep(wait)
	x := env.Send(&apitest.Recorder{}, flooder, retry.key, retry.id, retry.body)
	if x.Status != 201 {
		t.Fatalf("the refused key, sent again after Retry-After: %d %s", x.Status, x.Body)
	}
	if m, _ := env.LastMetrics(t); m.DynamoDBCalls != 1 {
		t.Fatalf("an accepted mutation under the limit made %d DynamoDB calls, want 1", m.DynamoDBCalls)
	}
}

// floodUntilRefused sends mutations for user until one is refused as over
// their rate, with a whole number of seconds in Retry-After, which it
// returns; it fails after most.
func floodUntilRefused(t *testing.T, env *apitest.Harness, user string, most int) time.Duration {
	t.Helper()
	for range most {
		resp := env.Post(user, uuid.NewString(), apitest.EventBody(t, uuid.NewString()))
		if resp.StatusCode == 201 {
			continue
		}
		apitest.WantResponse(t, resp, 429, string(errcode.RateLimited))
		n, err := strconv.Atoi(resp.Headers["Retry-After"])
		if err != nil || n < 1 {
			t.Fatalf("Retry-After %q", resp.Headers["Retry-After"])
		}
		return time.Duration(n) * time.Second
	}
	t.Fatalf("%d mutations in a row, none refused", most)
	return 0
}
