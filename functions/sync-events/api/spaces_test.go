package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
)

// space is a test's view of one space through the API.
type space struct {
	hs *apitest.Harness
	id string
}

func (s space) path(p string) string { return strings.ReplaceAll(p, "{spaceId}", s.id) }

func newSpace(t *testing.T, hs *apitest.Harness, owner string) space {
	t.Helper()
	id := uuid.NewString()
	resp := hs.Call("POST", api.SpacesPath, owner, uuid.NewString(), `{"id":"`+id+`","name":"Shopping"}`)
	apitest.WantResponse(t, resp, 201, "")
	return space{hs, id}
}

func (s space) add(t *testing.T, by, member, role string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return s.hs.Call("POST", s.path(api.SpaceMembersPath), by, uuid.NewString(), `{"member":"`+member+`","role":"`+role+`"}`)
}

func (s space) remove(t *testing.T, by, member string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return s.hs.Call("DELETE", strings.ReplaceAll(s.path(api.SpaceMemberPath), "{memberId}", url.PathEscape(member)), by, uuid.NewString(), "")
}

func (s space) post(t *testing.T, by string) (events.APIGatewayV2HTTPResponse, string) {
	t.Helper()
	id := uuid.NewString()
	return s.hs.Call("POST", s.path(api.SpaceEventsPath), by, uuid.NewString(), apitest.EventBody(t, id)), id
}

// pull drains the space as user: the listed events' ids, types and
// authors, or the refusal.
func (s space) pull(t *testing.T, user string) (ids, types, authors []string, refused events.APIGatewayV2HTTPResponse) {
	t.Helper()
	evs, _, last := s.hs.Walk(s.path(api.SpaceEventsPath), user, "", 1000)
	if last.StatusCode != 200 {
		return nil, nil, nil, last
	}
	for _, ev := range evs {
		ids, types, authors = append(ids, ev.ID), append(types, ev.Type), append(authors, ev.Author)
	}
	return ids, types, authors, last
}

// TestSpacesRolesFromEachSide walks one space's life from every member's
// side, and from outside it: who may write, read, add and remove, what
// each refusal is, and that a refusal records nothing.
func TestSpacesRolesFromEachSide(t *testing.T) {
	hs := apitest.New(t)
	s := newSpace(t, hs, "alice")

	// Outside: no write, no read, no member added, nothing recorded.
	ledger := hs.LedgerCount()
	resp, _ := s.post(t, "mallory")
	apitest.WantResponse(t, resp, 403, "SPACE_NOT_MEMBER")
	_, _, _, resp = s.pull(t, "mallory")
	apitest.WantResponse(t, resp, 403, "SPACE_NOT_MEMBER")
	apitest.WantResponse(t, s.add(t, "mallory", "mallory2", "writer"), 403, "SPACE_NOT_MEMBER")
	apitest.WantResponse(t, s.remove(t, "mallory", "alice"), 403, "SPACE_NOT_MEMBER")
	if hs.LedgerCount() != ledger {
		t.Errorf("refusals recorded keys: %d, then %d", ledger, hs.LedgerCount())
	}

	apitest.WantResponse(t, s.add(t, "alice", "bob", "writer"), 201, "")
	apitest.WantResponse(t, s.add(t, "alice", "carol", "reader"), 201, "")
	apitest.WantResponse(t, s.add(t, "alice", "bob", "reader"), 409, "SPACE_ALREADY_MEMBER")
	apitest.WantResponse(t, s.add(t, "bob", "dave", "reader"), 403, "SPACE_ROLE_FORBIDS")

	resp, bobs := s.post(t, "bob")
	apitest.WantResponse(t, resp, 201, "")
	resp, _ = s.post(t, "carol")
	apitest.WantResponse(t, resp, 403, "SPACE_ROLE_FORBIDS")
	ids, types, authors, resp := s.pull(t, "carol")
	apitest.WantResponse(t, resp, 200, "")
	want := []string{"space.created", "space.member_added", "space.member_added", "note.created"}
	if !slices.Equal(types, want) || ids[3] != bobs || !slices.Equal(authors, []string{"alice", "alice", "alice", "bob"}) {
		t.Errorf("carol's pull: types %v, authors %v, ids %v; want %v with bob's event last", types, authors, ids, want)
	}

	// Removed: bob's next write and pull are refused, and the space is no
	// longer among his.
	apitest.WantResponse(t, s.remove(t, "alice", "bob"), 200, "")
	resp, _ = s.post(t, "bob")
	apitest.WantResponse(t, resp, 403, "SPACE_NOT_MEMBER")
	_, _, _, resp = s.pull(t, "bob")
	apitest.WantResponse(t, resp, 403, "SPACE_NOT_MEMBER")
	if got := spacesOf(t, hs, "bob"); len(got) != 0 {
		t.Errorf("bob's spaces after removal: %v", got)
	}
	apitest.WantResponse(t, s.remove(t, "alice", "bob"), 404, "SPACE_NO_SUCH_MEMBER")

	// The last owner may not go; a reader may leave.
	apitest.WantResponse(t, s.remove(t, "alice", "alice"), 409, "SPACE_LAST_OWNER")
	apitest.WantResponse(t, s.remove(t, "carol", "carol"), 200, "")
	if got := spacesOf(t, hs, "alice"); len(got) != 1 || got[0] != s.id+":owner" {
		t.Errorf("alice's spaces: %v", got)
	}
}

func spacesOf(t *testing.T, hs *apitest.Harness, user string) []string {
	t.Helper()
	resp := hs.Call("GET", api.SpacesPath, user, "", "")
	apitest.WantResponse(t, resp, 200, "")
	var body struct{ Spaces []struct{ ID, Role string } }
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range body.Spaces {
		out = append(out, s.ID+":"+s.Role)
	}
	return out
}

// TestCreatingASpaceIsExactlyOnce: a retry replays, another key for the
// same id is refused, and a client cannot write the service's types.
func TestCreatingASpaceIsExactlyOnce(t *testing.T) {
	hs := apitest.New(t)
	id, key := uuid.NewString(), uuid.NewString()
	body := `{"id":"` + id + `","name":"Family"}`
	first := hs.Call("POST", api.SpacesPath, "alice", key, body)
	apitest.WantResponse(t, first, 201, "")
	again := hs.NewEnvironment().Call("POST", api.SpacesPath, "alice", key, body)
	if again.StatusCode != 201 || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("a retry: %d %s %v", again.StatusCode, again.Body, again.Headers)
	}
	apitest.WantResponse(t, hs.Call("POST", api.SpacesPath, "bob", uuid.NewString(), body), 409, "SPACE_ALREADY_EXISTS")
	reserved := strings.Replace(apitest.EventBody(t, uuid.NewString()), `"note.created"`, `"space.member_added"`, 1)
	apitest.WantResponse(t, hs.Post("alice", uuid.NewString(), reserved), 400, "VALIDATION_FAILED")
	// Only the service's exact types are its own: a client's "space.…" or
	// "event.…" type is the client's.
	theirs := strings.Replace(apitest.EventBody(t, uuid.NewString()), `"note.created"`, `"event.opened"`, 1)
	apitest.WantResponse(t, hs.Post("alice", uuid.NewString(), theirs), 201, "")
	apitest.WantResponse(t, hs.Call("POST", api.SpacesPath, "space#x", uuid.NewString(), `{"id":"`+uuid.NewString()+`","name":"x"}`), 403, "CALLER_ID_UNSUPPORTED")
}

// TestSpacesHostileInput: bad ids, bodies and paths on the spaces' routes
// are refused with a code, write nothing, and no member's id reaches the
// logs (a member's route carries one in its path).
func TestSpacesHostileInput(t *testing.T) {
	hs := apitest.New(t)
	s := newSpace(t, hs, "alice")
	secret := "secret-member-7f3a"
	apitest.WantResponse(t, s.add(t, "alice", secret, "writer"), 201, "")
	writes := func() int { return hs.LedgerCount() + itemCount(t, hs) }
	members := s.path(api.SpaceMembersPath)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"space id in capitals", "POST", "/api/v1/spaces/" + strings.ToUpper(s.id) + "/events", apitest.EventBody(t, uuid.NewString()), 400, "VALIDATION_FAILED"},
		{"space id not a UUID", "GET", "/api/v1/spaces/..%2F..%2Fsync/events", "", 400, "VALIDATION_FAILED"},
		{"a space created with an id in capitals", "POST", api.SpacesPath, `{"id":"` + strings.ToUpper(uuid.NewString()) + `","name":"x"}`, 400, "VALIDATION_FAILED"},
		{"a space with an empty name", "POST", api.SpacesPath, `{"id":"` + uuid.NewString() + `","name":""}`, 400, "VALIDATION_FAILED"},
		{"a space with a name of 101 characters", "POST", api.SpacesPath, `{"id":"` + uuid.NewString() + `","name":"` + strings.Repeat("é", 101) + `"}`, 400, "VALIDATION_FAILED"},
		{"a space body with another member", "POST", api.SpacesPath, `{"id":"` + uuid.NewString() + `","name":"x","owner":"mallory"}`, 400, "VALIDATION_FAILED"},
		{"a member of no role", "POST", members, `{"member":"bob"}`, 400, "VALIDATION_FAILED"},
		{"a member of an unknown role", "POST", members, `{"member":"bob","role":"admin"}`, 400, "VALIDATION_FAILED"},
		{"a member named like a space's stream", "POST", members, `{"member":"space#` + s.id + `","role":"writer"}`, 400, "VALIDATION_FAILED"},
		{"a member of 257 characters", "POST", members, `{"member":"` + strings.Repeat("m", 257) + `","role":"writer"}`, 400, "VALIDATION_FAILED"},
		{"a member given as a number", "POST", members, `{"member":7,"role":"writer"}`, 400, "VALIDATION_FAILED"},
		{"a member's id badly escaped", "DELETE", members + "/%zz", "", 400, "VALIDATION_FAILED"},
		{"the service's own event type", "POST", s.path(api.SpaceEventsPath), strings.Replace(apitest.EventBody(t, uuid.NewString()), `"note.created"`, `"space.member_removed"`, 1), 400, "VALIDATION_FAILED"},
		{"a deletion notice's type", "POST", s.path(api.SpaceEventsPath), strings.Replace(apitest.EventBody(t, uuid.NewString()), `"note.created"`, `"event.deleted"`, 1), 400, "VALIDATION_FAILED"},
		{"a batch of 98 in a space", "POST", s.path(api.SpaceBatchPath), batchOfN(t, 98), 400, "VALIDATION_FAILED"},
		{"an event id that is no UUID", "DELETE", s.path(api.SpaceEventsPath) + "/not-a-uuid", "", 400, "VALIDATION_FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := writes()
			resp := hs.Call(tc.method, tc.path, "alice", uuid.NewString(), tc.body)
			apitest.WantResponse(t, resp, tc.status, tc.code)
			if after := writes(); after != before {
				t.Fatalf("a refused request wrote %d items", after-before)
			}
		})
	}
	apitest.WantResponse(t, s.remove(t, "alice", secret), 200, "")
	if logs := hs.Logs(); strings.Contains(logs, secret) {
		t.Errorf("a member's id is in the logs:\n%s", logs)
	}
}

// itemCount is every item of the events table: events, heads, spaces'
// items.
func itemCount(t *testing.T, hs *apitest.Harness) int {
	t.Helper()
	out, err := hs.B.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(hs.B.Tables.Events), Select: types.SelectCount})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

func batchOfN(t *testing.T, n int) string {
	evs := make([]string, n)
	for i := range evs {
		evs[i] = apitest.EventBody(t, uuid.NewString())
	}
	return `{"events":[` + strings.Join(evs, ",") + `]}`
}

// TestRefusedSpaceWritesAreLimitedPerCaller: a refused write to a space
// costs a failed transaction and no stream's token, so an outsider (or a
// reader) who keeps trying is answered 429 after a burst of refusals,
// before DynamoDB is called; the space's members write on, and the
// outsider's own stream is not touched by it. With changes unlimited
// (CHANGES_PER_SECOND=0), refusals are too.
func TestRefusedSpaceWritesAreLimitedPerCaller(t *testing.T) {
	hs := apitest.NewLimited(t, 10, 60, 0, 0) // the default changes limit, as deployed
	s := newSpace(t, hs, "alice")
	apitest.WantResponse(t, s.add(t, "alice", "carol", "reader"), 201, "")
	for _, refused := range []struct{ who, code string }{{"mallory", "SPACE_NOT_MEMBER"}, {"carol", "SPACE_ROLE_FORBIDS"}} {
		n, start := 0, time.Now()
		for ; n < 50; n++ {
			resp, _ := s.post(t, refused.who)
			if resp.StatusCode == 429 {
				apitest.WantResponse(t, resp, 429, "RATE_LIMITED")
				if resp.Headers["Retry-After"] == "" {
					t.Errorf("%s: a 429 without Retry-After", refused.who)
				}
				break
			}
			apitest.WantResponse(t, resp, 403, refused.code)
		}
		// The burst, and a token more for each second the refusals took
		// (one a second comes back: a slow backend's calls take that long).
		if refills := int(time.Since(start) / time.Second); n < 10 || n > 10+refills {
			t.Errorf("%s: %d refusals before the 429 in %d s, want the burst of 10 and up to one a second more", refused.who, n, refills)
		}
		before := hs.B.Transport.Calls()["TransactWriteItems"]
		for range 5 {
			resp, _ := s.post(t, refused.who)
			apitest.WantResponse(t, resp, 429, "RATE_LIMITED")
		}
		if after := hs.B.Transport.Calls()["TransactWriteItems"]; after != before {
			t.Errorf("%s: %d transactions sent while limited", refused.who, after-before)
		}
	}
	for i := range 20 {
		if resp, _ := s.post(t, "alice"); resp.StatusCode != 201 {
			t.Fatalf("the owner's write %d: %d %s", i, resp.StatusCode, resp.Body)
		}
	}
	apitest.WantResponse(t, hs.Post("mallory", uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")

	off := apitest.New(t) // CHANGES_PER_SECOND=0
	o := newSpace(t, off, "alice")
	for range 30 {
		resp, _ := o.post(t, "mallory")
		apitest.WantResponse(t, resp, 403, "SPACE_NOT_MEMBER")
	}
}

// TestABusySpaceLimitsEachMembersAccepts: an accepted write touches no
// head, so not the head's bucket either; a busy space's accepts are
// limited per member instead, on the member item the accept updates
// anyway: here 6 in each window of 3 s (2 a second, a burst of 6). A
// member's 7th request in a window is refused 429 RATE_LIMITED with a
// Retry-After up to the window's end, nothing stored; another member is
// not held back by them; at the next window the member is accepted again.
func TestABusySpaceLimitsEachMembersAccepts(t *testing.T) {
	hs := apitest.NewAcceptingLimited(t, 2, 6)
	s := newSpace(t, hs, "alice")
	apitest.WantResponse(t, s.add(t, "alice", "bob", "writer"), 201, "")
	hs.YieldHead(s.id, time.Minute) // every write to the space is accepted
	const window = 3 * time.Second
	if left := window - time.Duration(time.Now().UnixMilli()%window.Milliseconds())*time.Millisecond; left < 2*time.Second {
		time.Sleep(left) // the burst in one window, not across two
	}
	accepts := hs.Accepts()
	for i := range 6 {
		resp, _ := s.post(t, "bob")
		apitest.WantResponse(t, resp, 201, "")
		if got := hs.Accepts() - accepts; got != int64(i+1) {
			t.Fatalf("bob's write %d: %d accepted, want %d: the write was not accepted", i, got, i+1)
		}
	}
	records := hs.LedgerCount()
	resp, _ := s.post(t, "bob")
	apitest.WantResponse(t, resp, 429, "RATE_LIMITED")
	wait, err := strconv.Atoi(resp.Headers["Retry-After"])
	if err != nil || wait < 1 || wait > 3 {
		t.Fatalf("Retry-After %q, want 1 to 3 s: the window's end", resp.Headers["Retry-After"])
	}
	if got := hs.LedgerCount(); got != records {
		t.Errorf("%d ledger records after the refusal, %d before: a refused accept stored its record", got, records)
	}
	resp, _ = s.post(t, "alice")
	apitest.WantResponse(t, resp, 201, "") // another member's window

	time.Sleep(time.Duration(wait) * time.Second)
	hs.B.Transport.Reset()
	resp, _ = s.post(t, "bob")
	apitest.WantResponse(t, resp, 201, "")
	// The window passed: the accept refused on it, the member item read,
	// the accept again with the count started over (and, the environment's
	// mark of a contended head having lapsed, a try at the head first).
	t.Logf("the first accept of a new window: %v", hs.B.Transport.Calls())
	if got := hs.Accepts() - accepts; got != 8 {
		t.Errorf("%d writes accepted, want 8 (bob's 6 and 1, alice's 1)", got)
	}
}
