package notes_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
)

const (
	alice = "alice"
	bob   = "bob"
	// The seed's refusals, byte for byte.
	keyReused  = `{"error":"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD","message":"Idempotency key already used with a different payload"}`
	keyMissing = `{"error":"VALIDATION_FAILED","message":"Idempotency-Key header is required"}`
	// The notes API's own.
	staleVersion  = `{"error":"NOTE_VERSION_CONFLICT","message":"The note has changed since the version sent; nothing was stored"}`
	noteNotFound  = `{"error":"NOTE_NOT_FOUND","message":"No note with this id; nothing was stored"}`
	alreadyExists = `{"error":"NOTE_ALREADY_EXISTS","message":"A note with this id exists; nothing was stored"}`
)

// withID is s with the note's id for $ID.
func withID(s, id string) string { return strings.ReplaceAll(s, "$ID", id) }

func createBody(id string) string {
	return fmt.Sprintf(`{"id":%q,"title":"Groceries","body":"milk"}`, id)
}

func patchBody(version int, title string) string {
	return fmt.Sprintf(`{"version":%d,"title":%q}`, version, title)
}

// create stores user's note id through the API, under a key of its own.
func create(t *testing.T, svc *notes.Service, user, id string) {
	t.Helper()
	if a := send(t, svc, request("POST /notes", "", user, uuid.NewString(), createBody(id))); a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
}

// stored is the note as the table should hold it.
func stored(user, id, title, body, version string) map[string]string {
	return map[string]string{notes.UserAttr: user, notes.IDAttr: id, notes.TitleAttr: title, notes.BodyAttr: body, notes.VersionAttr: version}
}

// Each route, sent once and then again: the second answer is the first,
// byte for byte, marked replayed; the note changed once; and the calls
// are those of the package's promise: a fresh mutation is one
// TransactWriteItems, a replay in the same environment none.
func TestEachRouteFreshThenReplayed(t *testing.T) {
	cases := []struct {
		name, route string
		exists      bool // the note is created first
		body        string
		status      int
		want        string                            // the answer, $ID for the id
		stored      func(id string) map[string]string // the note after; nil for none
	}{
		{
			name: "POST", route: "POST /notes", body: createBody("$ID"), status: 201,
			want:   `{"id":"$ID","title":"Groceries","body":"milk","version":1}`,
			stored: func(id string) map[string]string { return stored(alice, id, "Groceries", "milk", "1") },
		},
		{
			name: "PATCH", route: "PATCH /notes/{id}", exists: true, body: patchBody(1, "Errands"), status: 200,
			want:   `{"id":"$ID","title":"Errands","version":2}`,
			stored: func(id string) map[string]string { return stored(alice, id, "Errands", "milk", "2") },
		},
		{
			name: "PATCH body only", route: "PATCH /notes/{id}", exists: true, body: `{"version":1,"body":"oat milk"}`, status: 200,
			want:   `{"id":"$ID","body":"oat milk","version":2}`,
			stored: func(id string) map[string]string { return stored(alice, id, "Groceries", "oat milk", "2") },
		},
		{
			name: "DELETE", route: "DELETE /notes/{id}", exists: true, status: 200,
			want:   `{"id":"$ID","deleted":true}`,
			stored: func(string) map[string]string { return nil },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t)
			env, other := b.env(), b.env()
			id, key := uuid.NewString(), uuid.NewString()
			if tc.exists {
				create(t, env, alice, id)
			}
			pathID := id
			if !tc.exists {
				pathID = ""
			}
			e := request(tc.route, pathID, alice, key, withID(tc.body, id))
			want := withID(tc.want, id)

			b.calls.reset()
			fresh := send(t, env, e)
			freshCalls, freshTotal := b.calls.snapshot()
			if fresh.status != tc.status || fresh.body != want || fresh.replayed {
				t.Fatalf("fresh: %d %s replayed=%v, want %d %s", fresh.status, fresh.body, fresh.replayed, tc.status, want)
			}
			if freshTotal != 1 || freshCalls["TransactWriteItems"] != 1 {
				t.Errorf("fresh %s: calls %v, want one TransactWriteItems", tc.name, freshCalls)
			}

			b.calls.reset()
			warm := send(t, env, e)
			_, warmTotal := b.calls.snapshot()
			if warm.status != fresh.status || warm.body != fresh.body || !warm.replayed {
				t.Fatalf("warm replay: %d %s replayed=%v, want the fresh answer, replayed", warm.status, warm.body, warm.replayed)
			}
			if warmTotal != 0 {
				t.Errorf("warm replay %s: %d calls, want 0", tc.name, warmTotal)
			}

			b.calls.reset()
			cold := send(t, other, e)
			coldCalls, coldTotal := b.calls.snapshot()
			if cold.status != fresh.status || cold.body != fresh.body || !cold.replayed {
				t.Fatalf("replay in another environment: %d %s replayed=%v", cold.status, cold.body, cold.replayed)
			}
			t.Logf("calls on %s, %s: fresh %d, warm replay %d, replay in another environment %d %v",
				b.name, tc.name, freshTotal, warmTotal, coldTotal, coldCalls)

			if got, want := b.storedNote(t, alice, id), tc.stored(id); !maps.Equal(got, want) {
				t.Errorf("stored %v, want %v", got, want)
			}
			if n := countRecords(t, b, key); n != 1 {
				t.Errorf("%d ledger records for the key, want 1", n)
			}
		})
	}
}

func countRecords(t *testing.T, b *backend, key string) int {
	t.Helper()
	n := 0
	for _, rec := range b.records(t) {
		if rec.Key == key {
			n++
		}
	}
	return n
}

// A key, once used, answers only its own request: another body, another
// note in the path, or another route gets the seed's 409, and the note
// does not change.
func TestKeyReusedWithAnotherRequest(t *testing.T) {
	b := start(t)
	env := b.env()
	id, otherID, key := uuid.NewString(), uuid.NewString(), uuid.NewString()
	create(t, env, alice, id)
	create(t, env, alice, otherID)
	first := send(t, env, request("PATCH /notes/{id}", id, alice, key, patchBody(1, "Errands")))
	if first.status != 200 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	cases := []struct {
		name string
		e    func() answer
	}{
		{"other body", func() answer {
			return send(t, env, request("PATCH /notes/{id}", id, alice, key, patchBody(1, "Chores")))
		}},
		{"other note", func() answer {
			return send(t, env, request("PATCH /notes/{id}", otherID, alice, key, patchBody(1, "Errands")))
		}},
		{"other route", func() answer { return send(t, env, request("DELETE /notes/{id}", id, alice, key, "")) }},
		{"other body, another environment", func() answer {
			return send(t, b.env(), request("PATCH /notes/{id}", id, alice, key, patchBody(1, "Chores")))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if a := tc.e(); a.status != 409 || a.body != keyReused {
				t.Fatalf("%d %s, want 409 %s", a.status, a.body, keyReused)
			}
		})
	}
	if got := b.storedNote(t, alice, id); got[notes.TitleAttr] != "Errands" || got[notes.VersionAttr] != "2" {
		t.Errorf("note %v, want the first PATCH's", got)
	}
	if got := b.storedNote(t, alice, otherID); got[notes.VersionAttr] != "1" {
		t.Errorf("other note %v, want untouched", got)
	}
}

// Without a key nothing runs: the seed's 400, and no call at all.
func TestMissingKey(t *testing.T) {
	b := start(t)
	env := b.env()
	id := uuid.NewString()
	create(t, env, alice, id)
	for _, e := range []struct{ route, id, body string }{
		{"POST /notes", "", createBody(uuid.NewString())},
		{"PATCH /notes/{id}", id, patchBody(1, "Errands")},
		{"DELETE /notes/{id}", id, ""},
	} {
		t.Run(e.route, func(t *testing.T) {
			b.calls.reset()
			a := send(t, env, request(e.route, e.id, alice, "", e.body))
			if a.status != 400 || a.body != keyMissing {
				t.Fatalf("%d %s, want 400 %s", a.status, a.body, keyMissing)
			}
			if _, n := b.calls.snapshot(); n != 0 {
				t.Errorf("%d calls, want 0", n)
			}
		})
	}
	if got := b.storedNote(t, alice, id); got[notes.VersionAttr] != "1" {
		t.Errorf("note %v, want untouched", got)
	}
}

// A write whose condition fails (a stale version, a missing note, an id
// already taken) answers its own code and records nothing: the same key
// then runs afresh once the request, or the state, is right.
func TestRefusedWritesRecordNothing(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, env *notes.Service, id string) // before the refused request
		route string
		body  string
		want  string // the refusal
		// fix makes the request good, and returns it; status is its answer.
		fix    func(t *testing.T, env *notes.Service, id string) string
		status int
	}{
		{
			name: "stale version",
			setup: func(t *testing.T, env *notes.Service, id string) {
				create(t, env, alice, id)
				if a := send(t, env, request("PATCH /notes/{id}", id, alice, uuid.NewString(), patchBody(1, "Errands"))); a.status != 200 {
					t.Fatalf("first PATCH: %d %s", a.status, a.body)
				}
			},
			route: "PATCH /notes/{id}", body: patchBody(1, "Chores"), want: staleVersion,
			fix:    func(*testing.T, *notes.Service, string) string { return patchBody(2, "Chores") },
			status: 200,
		},
		{
			name:  "PATCH of a missing note",
			setup: func(*testing.T, *notes.Service, string) {},
			route: "PATCH /notes/{id}", body: patchBody(1, "Chores"), want: noteNotFound,
			fix: func(t *testing.T, env *notes.Service, id string) string {
				create(t, env, alice, id)
				return patchBody(1, "Chores")
			},
			status: 200,
		},
		{
			name:  "DELETE of a missing note",
			setup: func(*testing.T, *notes.Service, string) {},
			route: "DELETE /notes/{id}", want: noteNotFound,
			fix: func(t *testing.T, env *notes.Service, id string) string {
				create(t, env, alice, id)
				return ""
			},
			status: 200,
		},
		{
			name:  "POST of an id taken",
			setup: func(t *testing.T, env *notes.Service, id string) { create(t, env, alice, id) },
			route: "POST /notes", body: createBody("$ID"), want: alreadyExists,
			fix:    func(*testing.T, *notes.Service, string) string { return createBody(uuid.NewString()) },
			status: 201,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t)
			env := b.env()
			id, key := uuid.NewString(), uuid.NewString()
			tc.setup(t, env, id)
			pathID := id
			if tc.route == "POST /notes" {
				pathID = ""
			}
			before := b.storedNote(t, alice, id)
			b.calls.reset()
			a := send(t, env, request(tc.route, pathID, alice, key, withID(tc.body, id)))
			calls, _ := b.calls.snapshot()
			if a.status/100 != 4 || a.body != tc.want {
				t.Fatalf("%d %s, want %s", a.status, a.body, tc.want)
			}
			t.Logf("calls on %s for the refusal: %v", b.name, calls)
			if n := countRecords(t, b, key); n != 0 {
				t.Fatalf("%d ledger records for a refused request's key, want 0", n)
			}
			if got := b.storedNote(t, alice, id); !maps.Equal(got, before) {
				t.Fatalf("note %v after a refusal, was %v", got, before)
			}
			body := tc.fix(t, env, id)
			if a := send(t, env, request(tc.route, pathID, alice, key, body)); a.status != tc.status || a.replayed {
				t.Fatalf("the same key, fixed: %d %s replayed=%v, want %d", a.status, a.body, a.replayed, tc.status)
			}
		})
	}
}

// Notes are the caller's: another user's note id is not found, and can be
// one of their own.
func TestNotesArePerUser(t *testing.T) {
	b := start(t)
	env := b.env()
	id := uuid.NewString()
	create(t, env, alice, id)
	if a := send(t, env, request("PATCH /notes/{id}", id, bob, uuid.NewString(), patchBody(1, "Mine"))); a.status != 404 || a.body != noteNotFound {
		t.Fatalf("bob's PATCH of alice's note: %d %s", a.status, a.body)
	}
	if a := send(t, env, request("DELETE /notes/{id}", id, bob, uuid.NewString(), "")); a.status != 404 {
		t.Fatalf("bob's DELETE of alice's note: %d %s", a.status, a.body)
	}
	create(t, env, bob, id)
	if got := b.storedNote(t, alice, id); got[notes.VersionAttr] != "1" || got[notes.TitleAttr] != "Groceries" {
		t.Errorf("alice's note %v, want untouched", got)
	}
}

// Requests refused as sent run nothing; each answers its code. One the
// envelope refuses (no caller, not JSON, no route) calls nothing; one the
// mutation refuses costs one read of the ledger, which answers instead if
// the key has a record.
func TestRefusedAsSent(t *testing.T) {
	id := uuid.NewString()
	cases := []struct {
		name, route, id, user, body string
		status                      int
		code                        string
		calls                       int
	}{
		{"POST id not a UUID", "POST /notes", "", alice, `{"id":"n-1","title":"Groceries"}`, 400, "VALIDATION_FAILED", 1},
		{"POST without title", "POST /notes", "", alice, fmt.Sprintf(`{"id":%q}`, id), 400, "VALIDATION_FAILED", 1},
		{"POST with a blank title", "POST /notes", "", alice, fmt.Sprintf(`{"id":%q,"title":"  "}`, id), 400, "VALIDATION_FAILED", 1},
		{"POST with an unknown field", "POST /notes", "", alice, fmt.Sprintf(`{"id":%q,"title":"a","colour":"red"}`, id), 400, "VALIDATION_FAILED", 1},
		{"POST not JSON", "POST /notes", "", alice, `{"id":`, 400, "VALIDATION_FAILED", 0},
		{"PATCH without version", "PATCH /notes/{id}", id, alice, `{"title":"a"}`, 400, "VALIDATION_FAILED", 1},
		{"PATCH version 0", "PATCH /notes/{id}", id, alice, `{"version":0,"title":"a"}`, 400, "VALIDATION_FAILED", 1},
		{"PATCH version not an integer", "PATCH /notes/{id}", id, alice, `{"version":1.5,"title":"a"}`, 400, "VALIDATION_FAILED", 1},
		{"PATCH changing nothing", "PATCH /notes/{id}", id, alice, `{"version":1}`, 400, "VALIDATION_FAILED", 1},
		{"PATCH path id not a UUID", "PATCH /notes/{id}", "n-1", alice, patchBody(1, "a"), 400, "VALIDATION_FAILED", 1},
		{"DELETE with a body", "DELETE /notes/{id}", id, alice, `{"version":1}`, 400, "VALIDATION_FAILED", 1},
		{"no verified sub", "PATCH /notes/{id}", id, "", patchBody(1, "a"), 401, "UNAUTHORIZED", 0},
		{"no such route", "GET /notes", "", alice, "", 404, "NOT_FOUND", 0},
	}
	b := start(t)
	env := b.env()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b.calls.reset()
			a := send(t, env, request(tc.route, tc.id, tc.user, uuid.NewString(), tc.body))
			var got struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(a.body), &got); err != nil || a.status != tc.status || got.Error != tc.code {
				t.Fatalf("%d %s, want %d %s", a.status, a.body, tc.status, tc.code)
			}
			if _, n := b.calls.snapshot(); n != tc.calls {
				t.Errorf("%d calls, want %d", n, tc.calls)
			}
		})
	}
	if recs := b.records(t); len(recs) != 0 {
		t.Errorf("%d ledger records, want 0", len(recs))
	}
}
