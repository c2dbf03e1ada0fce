package api_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/sync-events/sync-events/functions/sync-events/api"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/devserver"
	"github.com/sync-events/sync-events/internal/metrics"
	"github.com/sync-events/sync-events/openapi"
)

// harness is the real handler on a real DynamoDB-compatible backend.
type harness struct {
	t     testing.TB
	b     *ddbtest.Backend
	h     *api.Handler
	logMu sync.Mutex
	logs  bytes.Buffer
	// metrics holds the handler's metrics lines, under logMu too.
	metrics bytes.Buffer
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	hs := &harness{t: t, b: ddbtest.Start(t)}
	hs.h = api.Wire(hs.b.Client, tablesConfig(hs.b.Tables), hs.output())
	return hs
}

// output sends the handler's log and metrics lines to hs's buffers.
func (hs *harness) output() api.Output {
	return api.Output{
		Log:     slog.New(slog.NewJSONHandler(syncWriter{&hs.logMu, &hs.logs}, nil)),
		Metrics: metrics.NewWriter(syncWriter{&hs.logMu, &hs.metrics}, "sync-events-test"),
	}
}

// forTest is hs for one fuzz execution: the same handler and backend,
// failing t (its logs stay with hs).
func (hs *harness) forTest(t testing.TB) *harness {
	return &harness{t: t, b: hs.b, h: hs.h}
}

// newEnvironment is another Lambda execution environment on hs's backend:
// a handler of its own, with an empty replay cache.
func (hs *harness) newEnvironment() *harness {
	hs.t.Helper()
	other := &harness{t: hs.t, b: hs.b}
	other.h = api.Wire(hs.b.Client, tablesConfig(hs.b.Tables), other.output())
	return other
}

// environments is hs and n-1 others on its backend: concurrent requests to
// one function run in as many environments, each with its own cache.
func (hs *harness) environments(n int) []*harness {
	envs := []*harness{hs}
	for len(envs) < n {
		envs = append(envs, hs.newEnvironment())
	}
	return envs
}

// forget deletes one event and its ledger record from the tables.
func (hs *harness) forget(user, key, eventID string) {
	hs.t.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for table, k := range map[string]map[string]types.AttributeValue{
		hs.b.Tables.Events: {"user_id": s(user), "event_id": s(eventID)},
		hs.b.Tables.Ledger: {"user_id": s(user), "key": s(key)},
	} {
		if _, err := hs.b.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: k}); err != nil {
			hs.t.Fatalf("delete from %s: %v", table, err)
		}
	}
}

// tablesConfig is the default configuration on the given tables.
func tablesConfig(tables ddb.TableNames) config.Config {
	cfg := config.Defaults()
	cfg.IdempotencyTable, cfg.EventsTable = tables.Ledger, tables.Events
	return cfg
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

// eventBody is testdata/event.json with the given event id.
func eventBody(t testing.TB, id string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/event.json")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "{{ID}}", id)
}

// apiRequest is an API Gateway HTTP API event as API Gateway sends it,
// built by the one event builder (devserver.Event, what make run uses):
// lowercased header names, the JWT authorizer's claims in the context, the
// generated execute-api domain. method and body are set as given, whatever
// they are, so that hostile and fuzzed values reach the handler unchanged.
func apiRequest(method, user, key, body string) events.APIGatewayV2HTTPRequest {
	r := httptest.NewRequest(http.MethodPost, "https://abc123def4.execute-api.eu-west-1.amazonaws.com"+api.EventsPath, nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "sync-client/1.0")
	if key != "" {
		r.Header.Set(idempotency.HeaderName, key)
	}
	if user != "" {
		r.Header.Set("Authorization", "Bearer "+devserver.UnsignedToken(map[string]any{"sub": "", "iss": "https://issuer.example", "aud": "sync-app"}))
	}
	req, err := devserver.Event(r)
	if err != nil {
		panic(err)
	}
	req.Body, req.RequestContext.HTTP.Method = body, method
	if user != "" {
		req.RequestContext.Authorizer.JWT.Claims["sub"] = user // as given, even if not UTF-8
	}
	return req
}

func (hs *harness) do(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	hs.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := hs.h.Handle(ctx, req)
	if err != nil {
		hs.t.Fatalf("Handle returned an error: %v", err)
	}
	checkContract(hs.t, req, resp)
	return resp
}

// checkContract holds an exchange to openapi.yaml: every request a test
// sends through the handler, and every answer, is checked against it.
func checkContract(t testing.TB, req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	c, err := openapi.Load()
	if err == nil {
		err = c.Check(req, resp)
	}
	if err != nil && !errors.Is(err, openapi.ErrNotHTTP) {
		t.Errorf("contract: %v", err)
	}
}

func (hs *harness) post(user, key, body string) events.APIGatewayV2HTTPResponse {
	hs.t.Helper()
	return hs.do(apiRequest("POST", user, key, body))
}

func (hs *harness) get(user string, query map[string]string) events.APIGatewayV2HTTPResponse {
	hs.t.Helper()
	req := apiRequest("GET", user, "", "")
	req.QueryStringParameters = query
	return hs.do(req)
}

// stored maps each user to the sorted event ids stored for them.
func (hs *harness) stored() map[string][]string {
	out := map[string][]string{}
	for _, ev := range hs.b.StoredEvents(hs.t) {
		out[ev.UserID] = append(out[ev.UserID], ev.ID)
	}
	for _, ids := range out {
		sort.Strings(ids)
	}
	return out
}

func (hs *harness) ledgerCount() int {
	hs.t.Helper()
	return len(hs.b.LedgerRecords(hs.t))
}

func wantResponse(t testing.TB, resp events.APIGatewayV2HTTPResponse, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d (%s), want %d", resp.StatusCode, resp.Body, status)
	}
	if code != "" && !strings.Contains(resp.Body, `"error":"`+code+`"`) {
		t.Fatalf("body %s, want error %s", resp.Body, code)
	}
}
