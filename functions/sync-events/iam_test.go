package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// TestRoleGrantsEveryCallTheHandlerMakes runs a workload that takes every
// route and path of the real handler (POST, batch, GET pages, a replay and
// a 409 from a fresh environment, a batch naming an event already stored,
// a head moved by another environment, a failed read and its retry) on the
// current backend, and derives from the calls the DynamoDB client really
// sent the IAM actions they need, on which resource: an operation is
// authorised as dynamodb:<Operation> on its table or index, except that a
// transaction is authorised per action (a Put in TransactWriteItems needs
// dynamodb:PutItem on its table). Every one must be granted to the
// function's role in template.yaml, or the call fails in AWS with
// AccessDenied however well it passes here. Granted actions the workload
// never needed are logged: on another backend (one that returns no item
// with a failed condition) they may be needed.
func TestRoleGrantsEveryCallTheHandlerMakes(t *testing.T) {
	hs := apitest.New(t)
	var recording atomic.Bool
	calls := observeNeeds(t, hs, map[string]string{
		hs.B.Tables.Ledger: "!GetAtt IdempotencyTable.Arn",
		hs.B.Tables.Events: "!GetAtt EventsTable.Arn",
	}, recording.Load)
	run := func(env *apitest.Harness, method, path, user, key, body string, status int) {
		t.Helper()
		req := apitest.Request(method, user, key, body)
		req.RawPath, req.RequestContext.HTTP.Path = path, path
		recording.Store(true)
		resp := env.Do(req)
		recording.Store(false)
		if resp.StatusCode != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, resp.Body, status)
		}
	}
	ev := func() (string, string) { id := uuid.NewString(); return id, apitest.EventBody(t, id) }
	other := hs.NewEnvironment()

	key := uuid.NewString()
	_, first := ev()
	run(hs, "POST", api.EventsPath, "alice", key, first, 201)
	for range 3 {
		_, b := ev()
		run(hs, "POST", api.EventsPath, "alice", uuid.NewString(), b, 201)
	}
	// The head moved by another environment: it is read, or returned
	// with the failed condition.
	_, b := ev()
	run(other, "POST", api.EventsPath, "alice", uuid.NewString(), b, 201)
	// A replay and a 409 from fresh environments: the ledger is read.
	run(hs.NewEnvironment(), "POST", api.EventsPath, "alice", key, first, 201)
	_, b = ev()
	run(hs.NewEnvironment(), "POST", api.EventsPath, "alice", key, b, 409)
	// A batch, then one naming an event already stored.
	_, storedBody := ev()
	_, b2 := ev()
	run(hs, "POST", api.BatchPath, "alice", uuid.NewString(), `{"events":[`+storedBody+`,`+b2+`]}`, 201)
	_, b3 := ev()
	run(other, "POST", api.BatchPath, "alice", uuid.NewString(), `{"events":[`+b3+`,`+storedBody+`]}`, 409)
	// GET pages, the second from a cursor.
	recording.Store(true)
	page := hs.Pull("alice", "", 2)
	hs.Pull("alice", page.Cursor, 2)
	recording.Store(false)
	// A failed read and its retry, from a fresh environment.
	env := hs.NewEnvironment()
	f := hs.B.Transport.Inject(ddbtest.Fault{Kind: ddbtest.Refused, Times: 3})
	run(env, "POST", api.EventsPath, "alice", key, first, 503)
	if f.Fired() == 0 {
		t.Fatal("the fault never fired")
	}
	run(env, "POST", api.EventsPath, "alice", key, first, 201)

	// A space's life: created, a member added and writing, the members
	// and the space listed and pulled, a member removed.
	space := uuid.NewString()
	run(hs, "POST", api.SpacesPath, "alice", uuid.NewString(), `{"id":"`+space+`","name":"Shared"}`, 201)
	run(hs, "POST", "/api/v1/spaces/"+space+"/members", "alice", uuid.NewString(), `{"member":"bob","role":"writer"}`, 201)
	_, b = ev()
	run(hs, "POST", "/api/v1/spaces/"+space+"/events", "bob", uuid.NewString(), b, 201)
	run(hs, "GET", "/api/v1/spaces/"+space+"/events", "bob", "", "", 200)
	run(hs, "GET", api.SpacesPath, "bob", "", "", 200)
	removal := apitest.Request("DELETE", "alice", uuid.NewString(), "")
	delete(removal.Headers, "content-type")
	removal.RawPath, removal.RequestContext.HTTP.Path = "/api/v1/spaces/"+space+"/members/bob", "/api/v1/spaces/"+space+"/members/bob"
	recording.Store(true)
	if resp := hs.Do(removal); resp.StatusCode != 200 {
		t.Fatalf("remove: %d %s", resp.StatusCode, resp.Body)
	}
	recording.Store(false)

	granted := roleGrants(t, "SyncEventsFunction")
	needed := calls.get()
	var missing, unused []string
	for res, actions := range needed {
		for a := range actions {
			if !slices.Contains(granted[res], a) {
				missing = append(missing, a+" on "+res)
			}
		}
	}
	for res, actions := range granted {
		for _, a := range actions {
			if strings.HasPrefix(a, "dynamodb:") && !needed[res][a] {
				unused = append(unused, a+" on "+res)
			}
		}
	}
	slices.Sort(missing)
	slices.Sort(unused)
	t.Logf("%s: the calls needed %v", hs.B.Name, needed)
	if len(unused) > 0 {
		t.Logf("granted, never needed on %s: %v", hs.B.Name, unused)
	}
	if len(needed) == 0 {
		t.Fatal("no call recorded")
	}
	if len(missing) > 0 {
		t.Fatalf("the role does not grant %v: those calls would fail with AccessDenied in AWS", missing)
	}
}

// needs is the IAM actions the calls observed needed, by resource as
// template.yaml writes it.
type needs struct {
	mu    sync.Mutex
	byRes map[string]map[string]bool
}

func (n *needs) get() map[string]map[string]bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byRes
}

// observeNeeds records, from now to the test's end, the actions every
// DynamoDB call hs's backend sees needs while on() holds: resourceOf names
// each table as the template does; a call to another table fails the test.
func observeNeeds(t *testing.T, hs *apitest.Harness, resourceOf map[string]string, on func() bool) *needs {
	n := &needs{byRes: map[string]map[string]bool{}}
	hs.B.Transport.Observe(func(op string, body []byte) {
		if !on() {
			return // the test's own calls (table set-up, scans)
		}
		for _, need := range iamActions(t, op, body) {
			res, ok := resourceOf[need.table]
			if !ok {
				t.Errorf("%s on table %q, which is not the function's", op, need.table)
				continue
			}
			if need.index != "" {
				res = "!Sub ${EventsTable.Arn}/index/" + need.index
			}
			n.mu.Lock()
			if n.byRes[res] == nil {
				n.byRes[res] = map[string]bool{}
			}
			n.byRes[res][need.action] = true
			n.mu.Unlock()
		}
	})
	t.Cleanup(func() { hs.B.Transport.Observe(nil) })
	return n
}

// iamNeed is one IAM action a call needs, on a table or one of its indexes.
type iamNeed struct{ action, table, index string }

// iamActions is what the DynamoDB call op, with request body, needs.
func iamActions(t *testing.T, op string, body []byte) []iamNeed {
	var in struct {
		TableName     string
		IndexName     string
		RequestItems  map[string]json.RawMessage
		TransactItems []map[string]struct{ TableName string }
	}
	if err := json.Unmarshal(body, &in); err != nil {
		t.Errorf("%s: %v", op, err)
		return nil
	}
	switch op {
	case "TransactWriteItems", "TransactGetItems":
		// Authorised per action, as the action's own operation.
		perAction := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
		var out []iamNeed
		for _, item := range in.TransactItems {
			for kind, target := range item {
				action, ok := perAction[kind]
				if !ok {
					t.Errorf("%s: unknown action %s", op, kind)
				}
				out = append(out, iamNeed{"dynamodb:" + action, target.TableName, ""})
			}
		}
		return out
	case "BatchGetItem", "BatchWriteItem":
		var out []iamNeed
		for table := range in.RequestItems {
			out = append(out, iamNeed{"dynamodb:" + op, table, ""})
		}
		return out
	default:
		return []iamNeed{{"dynamodb:" + op, in.TableName, in.IndexName}}
	}
}

// roleGrants is the actions the role of the template's function grants, by resource as
// template.yaml writes it ("!GetAtt EventsTable.Arn"), read as
// template_test.go reads the template.
func roleGrants(t *testing.T, function string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Properties yaml.Node `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &tpl); err != nil {
		t.Fatalf("parse template.yaml: %v", err)
	}
	var fn struct {
		Role iamValue `yaml:"Role"`
	}
	fnNode := tpl.Resources[function].Properties
	if err := fnNode.Decode(&fn); err != nil {
		t.Fatal(err)
	}
	roleName, ok := strings.CutSuffix(fn.Role.Value, ".Arn")
	if fn.Role.Tag != "!GetAtt" || !ok {
		t.Fatalf("the function's role is %+v, not a role of the template", fn.Role)
	}
	var role struct {
		Policies []struct {
			PolicyDocument struct {
				Statement []struct {
					Effect   string   `yaml:"Effect"`
					Action   []string `yaml:"Action"`
					Resource iamValue `yaml:"Resource"`
				} `yaml:"Statement"`
			} `yaml:"PolicyDocument"`
		} `yaml:"Policies"`
	}
	roleNode := tpl.Resources[roleName].Properties
	if err := roleNode.Decode(&role); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range role.Policies {
		for _, s := range p.PolicyDocument.Statement {
			if s.Effect != "" && s.Effect != "Allow" {
				continue
			}
			res := strings.TrimSpace(fmt.Sprintf("%s %s", s.Resource.Tag, s.Resource.Value))
			out[res] = append(out[res], s.Action...)
		}
	}
	if len(out) == 0 {
		t.Fatal("the function's role grants nothing")
	}
	return out
}

// iamValue is a template value: a plain scalar, or an intrinsic function
// in its short form (!Ref, !GetAtt, !Sub), whose tag is kept.
type iamValue struct{ Tag, Value string }

func (v *iamValue) UnmarshalYAML(n *yaml.Node) error {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") { // "!!str" is YAML's own
		v.Tag = n.Tag
	}
	return n.Decode(&v.Value)
}

// TestRetentionRoleGrantsEveryCallATrimMakes: the retention function's
// role grants what trimming really sends (the floor read and raised, the
// positions queried, the events deleted), derived from the calls as for
// the API's role, and no DynamoDB action it never needs.
func TestRetentionRoleGrantsEveryCallATrimMakes(t *testing.T) {
	hs := apitest.New(t)
	for range 4 {
		apitest.WantResponse(t, hs.Post("alice", uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
	}
	calls := observeNeeds(t, hs, map[string]string{hs.B.Tables.Events: "!GetAtt EventsTable.Arn"}, func() bool { return true })
	log := eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}
	if res, err := log.Trim(context.Background(), "alice", time.Now().Add(time.Hour), 100); err != nil || res.Removed != 3 {
		t.Fatalf("Trim = %+v, %v", res, err)
	}
	if _, err := log.Trim(context.Background(), "alice", time.Now().Add(time.Hour), 100); err != nil { // the floor there already
		t.Fatal(err)
	}
	grantsExactly(t, "RetentionFunction", calls.get())
}

// grantsExactly holds a stream consumer's role to the DynamoDB calls it
// was seen making: each granted, and nothing else granted on a table or
// index (its stream reads are the mapping's, granted apart).
func grantsExactly(t *testing.T, function string, needed map[string]map[string]bool) {
	t.Helper()
	granted := roleGrants(t, function)
	for res, actions := range needed {
		for a := range actions {
			if !slices.Contains(granted[res], a) {
				t.Errorf("%s's role does not grant %s on %s: the call would fail with AccessDenied", function, a, res)
			}
		}
	}
	for res, actions := range granted {
		for _, a := range actions {
			if strings.HasPrefix(a, "dynamodb:") && !strings.HasSuffix(res, "StreamArn") && !needed[res][a] {
				t.Errorf("%s's role grants %s on %s, which it never needs", function, a, res)
			}
		}
	}
}

// TestSequencerRoleGrantsEveryCallAPassMakes: the sequencer function's
// role grants what placing a busy space's accepted events really sends
// (the head read, the pending events queried, the one transaction of
// positions, members' counts and head) and what its sweep sends (the
// index of pending events queried), derived from the calls, and no
// DynamoDB action it never needs.
func TestSequencerRoleGrantsEveryCallAPassMakes(t *testing.T) {
	hs := apitest.NewAccepting(t)
	spaceID, _ := hs.BusySpace(8, 3)
	var on atomic.Bool
	calls := observeNeeds(t, hs, map[string]string{hs.B.Tables.Events: "!GetAtt EventsTable.Arn"}, on.Load)
	on.Store(true)
	tb := eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}
	if n, err := tb.Drain(context.Background(), eventstore.SpaceStream(spaceID)); err != nil || n == 0 {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	if _, err := tb.Sweep(context.Background(), time.Now()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	on.Store(false)
	grantsExactly(t, "SequencerFunction", calls.get())
}
