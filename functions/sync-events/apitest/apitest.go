// Package apitest drives the events API's real handler on a real
// DynamoDB-compatible backend, for the API's own tests and for the system
// simulations: a Harness per execution environment, requests as API
// Gateway sends them, each exchange held to the OpenAPI document, and the
// invariants every answer and stored item must keep. It owns no rule of
// the API; it only observes it.
package apitest

import (
	"bytes"
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/local/devserver"
	"github.com/sync-events/sync-events/internal/metrics"
)

// Harness is the real handler on a real DynamoDB-compatible backend: one
// Lambda execution environment. Requests go in as API Gateway events,
// through the Lambda's own adapter (Handler.Handle, package edge), so that
// every test of the API also holds the conversion at the Lambda's edge to
// real events, and the contract check sees the exchange as API Gateway
// does.
type Harness struct {
	T testing.TB
	B *ddbtest.Backend
	H *api.Handler
	// cfg is what H was wired with; other environments get the same.
	cfg config.Config
	// sequencer, when set (NewSequenced), sequences what every
	// environment on the backend accepts.
	sequencer *eventstore.Worker
	// accepts, when set (NewAccepting), counts every environment's accepts.
	accepts *atomic.Int64

	logMu sync.Mutex
	logs  bytes.Buffer
	// metrics holds the handler's metrics lines, under logMu too.
	metrics bytes.Buffer
}

// New is a handler on fresh tables of the backend ddbtest.Start gives.
func New(t testing.TB) *Harness {
	t.Helper()
	return start(t, func(*config.Config) {})
}

// start is a harness on fresh tables, its configuration TablesConfig's as
// adjust leaves it.
func start(t testing.TB, adjust func(*config.Config)) *Harness {
	t.Helper()
	hs := &Harness{T: t, B: ddbtest.Start(t)}
	hs.cfg = TablesConfig(hs.B.Tables)
	adjust(&hs.cfg)
	hs.Rewire()
	return hs
}

// Rewire puts hs's handler together on hs.B.Client and its configuration:
// every harness is wired so, and a test that replaced the client (to
// measure it, say) calls it again.
func (hs *Harness) Rewire() {
	hs.H = api.Wire(hs.B.Client, hs.cfg, hs.Output())
}

// Output sends the handler's log and metrics lines to hs's buffers, and
// its accepts to hs's sequencer, if it has one.
func (hs *Harness) Output() api.Output {
	out := api.Output{
		Log:     slog.New(slog.NewJSONHandler(syncWriter{&hs.logMu, &hs.logs}, nil)),
		Metrics: metrics.NewWriter(syncWriter{&hs.logMu, &hs.metrics}, "sync-events-test"),
	}
	switch {
	case hs.sequencer != nil:
		out.Accepted = hs.sequencer.Wake
	case hs.accepts != nil:
		out.Accepted = func(string) { hs.accepts.Add(1) }
	}
	return out
}

// NewSequenced is New with the busy-space path on
// (eventstore.Store.AcceptWhenContended) in every environment of the
// backend, and one sequencer for them all, on the backend's client (its
// calls counted, its faults injected), as the poke function is one
// consumer of the table's change feed deployed.
func NewSequenced(t testing.TB) *Harness {
	t.Helper()
	hs := &Harness{T: t, B: ddbtest.Start(t)}
	hs.cfg = TablesConfig(hs.B.Tables)
	hs.cfg.SequencedSpaceWrites = true
	hs.sequencer = eventstore.NewWorker(eventstore.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}, nil)
	t.Cleanup(hs.sequencer.Close)
	hs.Rewire()
	return hs
}

// NewAccepting is New with the busy-space path on in every environment
// of the backend and nothing in the process to sequence what they
// accept, as the API's Lambda is deployed: the test runs the sequencer
// function, or checks what waits. Accepts counts the accepts.
func NewAccepting(t testing.TB) *Harness {
	t.Helper()
	hs := &Harness{T: t, B: ddbtest.Start(t), accepts: new(atomic.Int64)}
	hs.cfg = TablesConfig(hs.B.Tables)
	hs.cfg.SequencedSpaceWrites = true
	hs.Rewire()
	return hs
}

// Accepts is how many writes hs's environments accepted (NewAccepting's
// only; 0 for the others).
func (hs *Harness) Accepts() int64 {
	if hs.accepts == nil {
		return 0
	}
	return hs.accepts.Load()
}

// Sequenced is how many accepted events hs's sequencer placed so far.
func (hs *Harness) Sequenced() int {
	if hs.sequencer == nil {
		return 0
	}
	return hs.sequencer.Placed()
}

// Settle waits until the sequencer has placed every event accepted so
// far (none without a sequencer), failing the test if it has not within
// 30 s: a pass that cannot commit retries for ever.
func (hs *Harness) Settle() {
	hs.T.Helper()
	if hs.sequencer != nil && !hs.sequencer.IdleWithin(30*time.Second) {
		hs.T.Fatal("the sequencer has not placed every accepted event within 30 s (a pass keeps failing: see its log)")
	}
}

// Logs is what the handler logged so far, as JSON lines.
func (hs *Harness) Logs() string {
	hs.logMu.Lock()
	defer hs.logMu.Unlock()
	return hs.logs.String()
}

// Metrics is the handler's metrics lines so far.
func (hs *Harness) Metrics() string {
	hs.logMu.Lock()
	defer hs.logMu.Unlock()
	return hs.metrics.String()
}

// ForTest is hs for one fuzz execution: the same handler and backend,
// failing t (its logs stay with hs).
func (hs *Harness) ForTest(t testing.TB) *Harness {
	return &Harness{T: t, B: hs.B, H: hs.H, cfg: hs.cfg, sequencer: hs.sequencer, accepts: hs.accepts}
}

// NewEnvironment is another Lambda execution environment on hs's backend:
// a handler of its own, with an empty replay cache.
func (hs *Harness) NewEnvironment() *Harness {
	hs.T.Helper()
	other := &Harness{T: hs.T, B: hs.B, cfg: hs.cfg, sequencer: hs.sequencer, accepts: hs.accepts}
	other.Rewire()
	return other
}

// Observer is another environment on hs's backend whose calls bypass the
// counting, fault-injecting transport: a puller watching what writers do
// without adding to their calls or waiting on their faults.
func (hs *Harness) Observer() *Harness {
	hs.T.Helper()
	other := &Harness{T: hs.T, B: hs.B, cfg: hs.cfg}
	other.H = api.Wire(dynamotest.NewClient(hs.B.Endpoint, nil), hs.cfg, other.Output())
	return other
}

// Environments is hs and n-1 others on its backend: concurrent requests to
// one function run in as many environments, each with its own cache.
func (hs *Harness) Environments(n int) []*Harness {
	envs := []*Harness{hs}
	for len(envs) < n {
		envs = append(envs, hs.NewEnvironment())
	}
	return envs
}

// Forget deletes one event and its ledger record from the tables.
func (hs *Harness) Forget(user, key, eventID string) {
	hs.T.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for table, k := range map[string]map[string]types.AttributeValue{
		hs.B.Tables.Events: {"user_id": s(user), "event_id": s(eventID)},
		hs.B.Tables.Ledger: {"user_id": s(user), "key": s(key)},
	} {
		if _, err := hs.B.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: k}); err != nil {
			hs.T.Fatalf("delete from %s: %v", table, err)
		}
	}
}

// TablesConfig is the default configuration on the given tables, less
// the per-user rate limits: the simulations send one user's requests far
// faster than any device would, on purpose. NewLimited turns them on.
func TablesConfig(tables ddb.TableNames) config.Config {
	cfg := config.Defaults()
	cfg.IdempotencyTable, cfg.EventsTable = tables.Ledger, tables.Events
	cfg.ChangesPerSecond, cfg.ReadsPerSecond = 0, 0
	// Every write at its head unless the harness sequences
	// (NewSequenced, NewAccepting).
	cfg.SequencedSpaceWrites = false
	return cfg
}

// NewLimited is New with each user's mutations and reads limited to the
// rates and bursts given.
func NewLimited(t testing.TB, changesPerSecond, changesBurst, readsPerSecond, readsBurst int) *Harness {
	t.Helper()
	return start(t, func(c *config.Config) {
		c.ChangesPerSecond, c.ChangesBurst = changesPerSecond, changesBurst
		c.ReadsPerSecond, c.ReadsBurst = readsPerSecond, readsBurst
	})
}

// NewAcceptingLimited is NewAccepting with each user's mutations limited
// to the rate and burst given: at the head, each stream's; accepted, each
// member's (eventstore's accept limit).
func NewAcceptingLimited(t testing.TB, changesPerSecond, changesBurst int) *Harness {
	t.Helper()
	hs := NewAccepting(t)
	hs.cfg.ChangesPerSecond, hs.cfg.ChangesBurst = changesPerSecond, changesBurst
	hs.Rewire()
	return hs
}

type syncWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (s syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

//go:embed event.json
var eventTemplate string

// EventBody is a valid event (event.json) with the given event id.
func EventBody(_ testing.TB, id string) string {
	return strings.ReplaceAll(eventTemplate, "{{ID}}", id)
}

// Request is an API Gateway HTTP API event as API Gateway sends it,
// built by the one event builder (Event):
// lowercased header names, the JWT authorizer's claims in the context, the
// generated execute-api domain. method and body are set as given, whatever
// they are, so that hostile and fuzzed values reach the handler unchanged.
func Request(method, user, key, body string) events.APIGatewayV2HTTPRequest {
	r := httptest.NewRequest(http.MethodPost, "https://abc123def4.execute-api.eu-west-1.amazonaws.com"+api.EventsPath, nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "sync-client/1.0")
	if key != "" {
		r.Header.Set(idempotency.HeaderName, key)
	}
	if user != "" {
		r.Header.Set("Authorization", "Bearer "+devserver.UnsignedToken(map[string]any{"sub": "", "iss": "https://issuer.example", "aud": "sync-app"}))
	}
	req, err := Event(r)
	if err != nil {
		panic(err)
	}
	req.Body, req.RequestContext.HTTP.Method = body, method
	if user != "" {
		req.RequestContext.Authorizer.JWT.Claims["sub"] = user // as given, even if not UTF-8
	}
	return req
}

// Call sends method path (with its query, if any) as user under key (none
// if empty) with body; a request with no body has no Content-Type, as a
// client sends a DELETE.
func (hs *Harness) Call(method, path, user, key, body string) events.APIGatewayV2HTTPResponse {
	hs.T.Helper()
	req := Request(method, user, key, body)
	req.RawPath, req.RequestContext.HTTP.Path = path, path
	if body == "" {
		delete(req.Headers, "content-type")
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		req.RawPath, req.RequestContext.HTTP.Path = path[:i], path[:i]
		q, _ := url.ParseQuery(path[i+1:])
		req.RawQueryString, req.QueryStringParameters = path[i+1:], map[string]string{}
		for k := range q {
			req.QueryStringParameters[k] = q.Get(k)
		}
	}
	return hs.Do(req)
}

// Do sends req to the handler and holds the exchange to the contract.
func (hs *Harness) Do(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	hs.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := hs.H.Handle(ctx, req)
	if err != nil {
		hs.T.Fatalf("Handle returned an error: %v", err)
	}
	if resp.StatusCode >= 500 {
		// The cause is in the handler's log line (no payload is), for the
		// test that fails on this answer to show.
		hs.T.Logf("%d from the handler; its last log line: %s", resp.StatusCode, lastLine(hs.Logs()))
	}
	CheckContract(hs.T, req, resp)
	return resp
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// Post posts body for user under key.
func (hs *Harness) Post(user, key, body string) events.APIGatewayV2HTTPResponse {
	hs.T.Helper()
	return hs.Do(Request("POST", user, key, body))
}

// Get lists user's events with the query given.
func (hs *Harness) Get(user string, query map[string]string) events.APIGatewayV2HTTPResponse {
	hs.T.Helper()
	req := Request("GET", user, "", "")
	req.QueryStringParameters = query
	return hs.Do(req)
}

// Stored maps each user to the sorted event ids stored for them.
func (hs *Harness) Stored() map[string][]string {
	out := map[string][]string{}
	for _, ev := range hs.B.StoredEvents(hs.T) {
		out[ev.Stream] = append(out[ev.Stream], ev.ID)
	}
	for _, ids := range out {
		sort.Strings(ids)
	}
	return out
}

// LedgerCount is how many ledger records the table holds.
func (hs *Harness) LedgerCount() int {
	hs.T.Helper()
	return len(hs.B.LedgerRecords(hs.T))
}

// WantResponse fails t unless resp has status and, if code is set, that
// error code.
func WantResponse(t testing.TB, resp events.APIGatewayV2HTTPResponse, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d (%s), want %d", resp.StatusCode, resp.Body, status)
	}
	if code != "" && !strings.Contains(resp.Body, `"error":"`+code+`"`) {
		t.Fatalf("body %s, want error %s", resp.Body, code)
	}
}
