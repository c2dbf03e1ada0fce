package notes_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
)

// mayHaveBeenStored is the 503 after a commit whose outcome is unknown.
const mayHaveBeenStored = `{"error":"SERVICE_UNAVAILABLE","message":"Service temporarily unavailable; the change may have been stored: retrying with the same Idempotency-Key is safe"}`

// Lost answers: the TransactWriteItems reaches the server and commits,
// and its answer never reaches the client. Whether the SDK retries it or
// the client retries the request with its key, the note changes once, its
// version moves on by exactly one, and the client ends with the answer of
// that one change.
func TestLostAnswers(t *testing.T) {
	cases := []struct {
		name string
		// lost is how many TransactWriteItems answers are lost in a row:
		// below the SDK's attempts it retries them itself; past them it
		// gives up and the client is told to retry with the same key.
		lost int
		// first is the status of the first request's answer.
		first int
	}{
		{"SDK retries the transaction", 1, 200},
		{"SDK retries twice", 2, 200},
		{"client retries with its key", 1000, 503},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t)
			env := b.env()
			id, key := uuid.NewString(), uuid.NewString()
			create(t, env, alice, id)
			e := request("PATCH /notes/{id}", id, alice, key, patchBody(1, "Errands"))
			want := `{"id":"` + id + `","title":"Errands","version":2}`

			b.calls.reset()
			b.calls.LoseAnswers("TransactWriteItems", tc.lost)
			a := send(t, env, e)
			if a.status != tc.first {
				t.Fatalf("first answer %d %s, want %d", a.status, a.body, tc.first)
			}
			// The commit was applied: the answer must not say that nothing
			// was.
			if a.status == 503 && a.body != mayHaveBeenStored {
				t.Fatalf("first answer %s, want %s", a.body, mayHaveBeenStored)
			}
			if a.status == 200 && a.body != want {
				t.Fatalf("first answer %s, want %s", a.body, want)
			}
			calls, _ := b.calls.snapshot()
			b.calls.reset() // the network is back
			t.Logf("calls on %s with %d answers lost: %v (answer %d, replayed=%v)", b.name, tc.lost, calls, a.status, a.replayed)
			if retry := send(t, env, e); retry.status != 200 || retry.body != want {
				t.Fatalf("the client's retry: %d %s, want 200 %s", retry.status, retry.body, want)
			}
			if got := b.storedNote(t, alice, id); got[notes.VersionAttr] != "2" || got[notes.TitleAttr] != "Errands" {
				t.Errorf("note %v, want version 2: changed once", got)
			}
			if n := countRecords(t, b, key); n != 1 {
				t.Errorf("%d ledger records for the key, want 1", n)
			}
		})
	}
}
