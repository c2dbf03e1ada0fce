package simulation_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
)

// TestRaceOneKeyOneBody: 100 copies of one request at once, spread over 10
// execution environments, so that replays come from DynamoDB and from
// memory both.
func TestRaceOneKeyOneBody(t *testing.T) {
	hs := apitest.New(t)
	envs := hs.Environments(10)
	const n = 100
	rec := &apitest.Recorder{}
	key, id := uuid.NewString(), uuid.NewString()
	body := apitest.EventBody(t, id)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { envs[i%len(envs)].Send(rec, "alice", key, id, body) })
	}
	wg.Wait()
	replayed := 0
	for _, x := range rec.All {
		if x.Status != 201 || x.Body != rec.All[0].Body {
			t.Fatalf("answer %d %s, another was %d %s", x.Status, x.Body, rec.All[0].Status, rec.All[0].Body)
		}
		if x.Replayed {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Fatalf("%d replayed, want %d", replayed, n-1)
	}
	hs.CheckInvariants(rec)
	t.Log(rec.Tally())
}

func TestRaceOneKeyManyBodies(t *testing.T) {
	hs := apitest.New(t)
	const n = 50
	rec := &apitest.Recorder{}
	key := uuid.NewString()
	ids, bodies := make([]string, n), make([]string, n)
	for i := range n {
		ids[i] = uuid.NewString()
		bodies[i] = apitest.EventBody(t, ids[i])
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { hs.Send(rec, "alice", key, ids[i], bodies[i]) })
	}
	wg.Wait()
	winner := -1
	for _, x := range rec.All {
		switch {
		case x.Status == 201 && winner == -1:
			for i := range ids {
				if ids[i] == x.EventID {
					winner = i
				}
			}
		case x.Status == 201:
			t.Fatalf("a second body won: %s", x.EventID)
		case x.Status != 409 || x.Code != string(errcode.KeyReused):
			t.Fatalf("a loser got %d %s", x.Status, x.Body)
		}
	}
	if winner == -1 {
		t.Fatal("no body won")
	}
	// The winner's retries replay it; the losers' retries still get the 409.
	if x := hs.Send(rec, "alice", key, ids[winner], bodies[winner]); x.Status != 201 || !x.Replayed {
		t.Fatalf("winner's retry: %d replayed=%v", x.Status, x.Replayed)
	}
	loser := (winner + 1) % n
	if x := hs.Send(rec, "alice", key, ids[loser], bodies[loser]); x.Status != 409 || x.Code != string(errcode.KeyReused) {
		t.Fatalf("loser's retry: %d %s", x.Status, x.Body)
	}
	hs.CheckInvariants(rec)
	t.Log(rec.Tally())
}

func TestRaceTwoUsersOneKey(t *testing.T) {
	hs := apitest.New(t)
	rec := &apitest.Recorder{}
	key := uuid.NewString()
	idA, idB := uuid.NewString(), uuid.NewString()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { hs.Send(rec, "alice", key, idA, apitest.EventBody(t, idA)) })
		wg.Go(func() { hs.Send(rec, "bob", key, idB, apitest.EventBody(t, idB)) })
	}
	wg.Wait()
	for _, x := range rec.All {
		want := idA
		if x.User == "bob" {
			want = idB
		}
		if x.Status != 201 || !containsID(x.Body, want) {
			t.Fatalf("%s got %d %s", x.User, x.Status, x.Body)
		}
	}
	hs.CheckInvariants(rec)
	t.Log(rec.Tally())
}

func containsID(body, id string) bool { return strings.Contains(body, `"id":"`+id+`"`) }

// TestRaceManyUsersManyKeys: four thousand requests from 40 users at once,
// on one pair of tables: fresh events, duplicates of them, keys reused with
// other bodies, and event ids resent under new keys, each to one of 8
// execution environments.
func TestRaceManyUsersManyKeys(t *testing.T) {
	const users, copies = 40, 3
	type job struct{ user, key, id, body string }
	hs := apitest.New(t)
	// moto's server runs behind one lock (.ci/moto-serial.py), and one
	// user's writers queue on the user's head, each retry another call: a
	// quarter of the keys keeps the same races within CI's time there.
	// Its lock also queues every call behind the others: 64 senders at
	// once there can wait out a request's deadline, so it gets 16.
	keysPerUser, senders := 20, 64
	if hs.B.Name == "moto" {
		keysPerUser, senders = 5, 16
	}
	envs := hs.Environments(8)
	var jobs []job
	for u := range users {
		user := fmt.Sprintf("user-%02d", u)
		for range keysPerUser {
			key, id := uuid.NewString(), uuid.NewString()
			for range copies {
				jobs = append(jobs, job{user, key, id, apitest.EventBody(t, id)})
			}
			other := uuid.NewString() // the same key with another body
			jobs = append(jobs, job{user, key, other, apitest.EventBody(t, other)})
			jobs = append(jobs, job{user, uuid.NewString(), id, apitest.EventBody(t, id)}) // the same event, a new key
		}
	}
	rand.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	rec := &apitest.Recorder{}
	work := make(chan job)
	var wg sync.WaitGroup
	var unanswered []apitest.Exchange
	var mu sync.Mutex
	for range senders {
		wg.Go(func() {
			for j := range work {
				// A 503 is retried with the same key, as a client does:
				// it may have been stored, and the retry must say which.
				var x apitest.Exchange
				for range 3 {
					x = envs[rand.IntN(len(envs))].Send(rec, j.user, j.key, j.id, j.body)
					if x.Status != 503 {
						break
					}
				}
				if x.Status >= 500 {
					mu.Lock()
					unanswered = append(unanswered, x)
					mu.Unlock()
				}
			}
		})
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	for _, x := range unanswered {
		t.Errorf("no answer after 3 tries: %d %s", x.Status, x.Body)
	}
	hs.CheckInvariants(rec)
	t.Log(rec.Tally())
}
