package notes_test

import (
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
)

// One PATCH, one key, sent many times at once: from one execution
// environment (one replay cache), and spread over several, each a Flow and
// Runner of its own on the same tables. Exactly one commits; every answer
// is that one's.
func TestRaceOneKeyOnePatch(t *testing.T) {
	cases := []struct {
		name      string
		envs, per int
	}{
		{"one environment", 1, 24},
		{"four environments", 4, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t)
			envs := make([]*notes.Service, tc.envs)
			for i := range envs {
				envs[i] = b.env()
			}
			id, key := uuid.NewString(), uuid.NewString()
			create(t, envs[0], alice, id)
			e := request("PATCH /notes/{id}", id, alice, key, patchBody(1, "Errands"))
			want := `{"id":"` + id + `","title":"Errands","version":2}`

			answers := make([]answer, tc.envs*tc.per)
			var wg sync.WaitGroup
			for i := range answers {
				wg.Go(func() { answers[i] = send(t, envs[i%tc.envs], e) })
			}
			wg.Wait()
			executed := 0
			for _, a := range answers {
				if a.status != 200 || a.body != want {
					t.Fatalf("an answer was %d %s, want 200 %s", a.status, a.body, want)
				}
				if !a.replayed {
					executed++
				}
			}
			if executed != 1 {
				t.Errorf("%d answers not replayed, want exactly 1", executed)
			}
			if got := b.storedNote(t, alice, id); got[notes.VersionAttr] != "2" || got[notes.TitleAttr] != "Errands" {
				t.Errorf("note %v, want version 2", got)
			}
			if recs := b.records(t); len(recs) != 2 { // the POST's and the PATCH's
				t.Errorf("%d ledger records, want 2", len(recs))
			}
		})
	}
}

// Many PATCHes of one version, each under its own key, at once: the
// version condition lets exactly one through; the others are told the
// note changed, and record nothing.
func TestRacePatchesOfOneVersion(t *testing.T) {
	b := start(t)
	envs := []*notes.Service{b.env(), b.env(), b.env()}
	id := uuid.NewString()
	create(t, envs[0], alice, id)
	const n = 12
	answers, titles := make([]answer, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		titles[i] = uuid.NewString()[:8]
		wg.Go(func() {
			answers[i] = send(t, envs[i%len(envs)], request("PATCH /notes/{id}", id, alice, uuid.NewString(), patchBody(1, titles[i])))
		})
	}
	wg.Wait()
	winner := -1
	for i, a := range answers {
		switch {
		case a.status == 200 && winner == -1:
			winner = i
		case a.status == 200:
			t.Fatalf("a second PATCH of version 1 went through: %s", a.body)
		case a.status != 409 || a.body != staleVersion:
			t.Fatalf("a loser got %d %s, want 409 %s", a.status, a.body, staleVersion)
		}
	}
	if winner == -1 {
		t.Fatal("no PATCH went through")
	}
	if got := b.storedNote(t, alice, id); got[notes.VersionAttr] != "2" || got[notes.TitleAttr] != titles[winner] {
		t.Errorf("note %v, want version 2 titled %s", got, titles[winner])
	}
	if recs := b.records(t); len(recs) != 2 {
		t.Errorf("%d ledger records, want 2 (the POST's and the winner's)", len(recs))
	}
}
