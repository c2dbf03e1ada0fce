package api_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
)

// TestRaceOneKeyOneBody: 100 copies of one request at once, spread over 10
// execution environments, so that replays come from DynamoDB and from
// memory both.
func TestRaceOneKeyOneBody(t *testing.T) {
	hs := newHarness(t)
	envs := hs.environments(10)
	const n = 100
	rec := &recorder{}
	key, id := uuid.NewString(), uuid.NewString()
	body := eventBody(t, id)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { envs[i%len(envs)].send(rec, "alice", key, id, body) })
	}
	wg.Wait()
	replayed := 0
	for _, x := range rec.all {
		if x.status != 201 || x.body != rec.all[0].body {
			t.Fatalf("answer %d %s, another was %d %s", x.status, x.body, rec.all[0].status, rec.all[0].body)
		}
		if x.replayed {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Fatalf("%d replayed, want %d", replayed, n-1)
	}
	hs.checkInvariants(rec)
	t.Log(rec.tally())
}

func TestRaceOneKeyManyBodies(t *testing.T) {
	hs := newHarness(t)
	const n = 50
	rec := &recorder{}
	key := uuid.NewString()
	ids, bodies := make([]string, n), make([]string, n)
	for i := range n {
		ids[i] = uuid.NewString()
		bodies[i] = eventBody(t, ids[i])
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { hs.send(rec, "alice", key, ids[i], bodies[i]) })
	}
	wg.Wait()
	winner := -1
	for _, x := range rec.all {
		switch {
		case x.status == 201 && winner == -1:
			for i := range ids {
				if ids[i] == x.eventID {
					winner = i
				}
			}
		case x.status == 201:
			t.Fatalf("a second body won: %s", x.eventID)
		case x.status != 409 || x.code != string(errcode.KeyReused):
			t.Fatalf("a loser got %d %s", x.status, x.body)
		}
	}
	if winner == -1 {
		t.Fatal("no body won")
	}
	// The winner's retries replay it; the losers' retries still get the 409.
	if x := hs.send(rec, "alice", key, ids[winner], bodies[winner]); x.status != 201 || !x.replayed {
		t.Fatalf("winner's retry: %d replayed=%v", x.status, x.replayed)
	}
	loser := (winner + 1) % n
	if x := hs.send(rec, "alice", key, ids[loser], bodies[loser]); x.status != 409 || x.code != string(errcode.KeyReused) {
		t.Fatalf("loser's retry: %d %s", x.status, x.body)
	}
	hs.checkInvariants(rec)
	t.Log(rec.tally())
}

func TestRaceTwoUsersOneKey(t *testing.T) {
	hs := newHarness(t)
	rec := &recorder{}
	key := uuid.NewString()
	idA, idB := uuid.NewString(), uuid.NewString()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { hs.send(rec, "alice", key, idA, eventBody(t, idA)) })
		wg.Go(func() { hs.send(rec, "bob", key, idB, eventBody(t, idB)) })
	}
	wg.Wait()
	for _, x := range rec.all {
		want := idA
		if x.user == "bob" {
			want = idB
		}
		if x.status != 201 || !containsID(x.body, want) {
			t.Fatalf("%s got %d %s", x.user, x.status, x.body)
		}
	}
	hs.checkInvariants(rec)
	t.Log(rec.tally())
}

func containsID(body, id string) bool { return strings.Contains(body, `"id":"`+id+`"`) }

// TestRaceManyUsersManyKeys: four thousand requests from 40 users at once,
// on one pair of tables: fresh events, duplicates of them, keys reused with
// other bodies, and event ids resent under new keys, each to one of 8
// execution environments.
func TestRaceManyUsersManyKeys(t *testing.T) {
	const users, copies = 40, 3
	type job struct{ user, key, id, body string }
	hs := newHarness(t)
	// moto's server runs behind one lock (.ci/moto-serial.py), and one
	// user's writers queue on the user's head, each retry another call: a
	// quarter of the keys keeps the same races within CI's time there.
	keysPerUser := 20
	if hs.b.Name == "moto" {
		keysPerUser = 5
	}
	envs := hs.environments(8)
	var jobs []job
	for u := range users {
		user := fmt.Sprintf("user-%02d", u)
		for range keysPerUser {
			key, id := uuid.NewString(), uuid.NewString()
			for range copies {
				jobs = append(jobs, job{user, key, id, eventBody(t, id)})
			}
			other := uuid.NewString() // the same key with another body
			jobs = append(jobs, job{user, key, other, eventBody(t, other)})
			jobs = append(jobs, job{user, uuid.NewString(), id, eventBody(t, id)}) // the same event, a new key
		}
	}
	rand.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	rec := &recorder{}
	work := make(chan job)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for j := range work {
				envs[rand.IntN(len(envs))].send(rec, j.user, j.key, j.id, j.body)
			}
		})
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	for _, x := range rec.all {
		if x.status >= 500 {
			t.Errorf("%d %s", x.status, x.body)
		}
	}
	hs.checkInvariants(rec)
	t.Log(rec.tally())
}
