package mutation_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
)

// The seed's refusals, byte for byte.
const (
	seed400 = `{"error":"VALIDATION_FAILED","message":"Idempotency-Key header is required"}`
	seed409 = `{"error":"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD","message":"Idempotency key already used with a different payload"}`
)

// fixture is a Runner on a real backend whose mutation puts one item of
// the events table, named by the body's "id", conditioned on its being
// new, and answers 201 with the id and a count of its executions.
type fixture struct {
	b     *ddbtest.Backend
	runs  atomic.Int64
	mut   mutation.Mutation[types.TransactWriteItem]
	reads atomic.Int64 // requests the adapters handed to next
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{b: ddbtest.Start(t)}
	f.mut = func(_ context.Context, r *mutation.Request) (mutation.Plan[types.TransactWriteItem], error) {
		id, err := bodyID(r.Body)
		if err != nil {
			return mutation.Plan[types.TransactWriteItem]{}, err
		}
		return mutation.Plan[types.TransactWriteItem]{Execute: func(context.Context, time.Time) (idempotency.Execution[types.TransactWriteItem], error) {
			n := f.runs.Add(1)
			return idempotency.Execution[types.TransactWriteItem]{
				Response: idempotency.Response{StatusCode: 201, Body: fmt.Appendf(nil, `{"id":%q,"run":%d}`, id, n)},
				Writes:   []types.TransactWriteItem{f.putNew(r.User, id)},
			}, nil
		}}, nil
	}
	return f
}

// bodyID reads {"id": "..."} with nothing but the standard library's
// string search: the body is valid JSON by the time a mutation reads it.
func bodyID(body []byte) (string, error) {
	_, rest, ok := bytes.Cut(body, []byte(`"id":"`))
	id, _, ok2 := bytes.Cut(rest, []byte(`"`))
	if !ok || !ok2 || len(id) == 0 {
		return "", errcode.Invalid("id is required", errcode.Field{Field: "id"})
	}
	return string(id), nil
}

func (f *fixture) putNew(user, id string) types.TransactWriteItem {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(f.b.Tables.Events),
		Item:                     map[string]types.AttributeValue{"user_id": s(user), "event_id": s(id), "received_key": s("k" + id)},
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": "event_id"},
	}}
}

func (f *fixture) runner(o mutation.Options) *mutation.Runner[types.TransactWriteItem] {
	flow := idempotency.NewFlow(f.b.Ledger(), idempotency.Options{Cache: idempotency.NewReplayCache(1 << 20)})
	return mutation.New(flow, o)
}

// sent is a request as a client sends it, and what came back.
type sent struct {
	method, key, body string
	header            map[string]string
}

type answer struct {
	status int
	header http.Header
	body   string
}

// adapter sends a request through one of the package's doors.
type adapter struct {
	name string
	send func(t *testing.T, f *fixture, m *mutation.Runner[types.TransactWriteItem], s sent) answer
}

func headersOf(s sent) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if s.key != "" {
		h.Set("Idempotency-Key", s.key)
	}
	for k, v := range s.header {
		h.Set(k, v)
	}
	return h
}

var adapters = []adapter{
	{"http-api", func(t *testing.T, f *fixture, m *mutation.Runner[types.TransactWriteItem], s sent) answer {
		h := map[string]string{}
		for k, v := range headersOf(s) {
			h[strings.ToLower(k)] = strings.Join(v, ",")
		}
		e := events.APIGatewayV2HTTPRequest{RouteKey: s.method + " /items", RawPath: "/items", Headers: h, Body: s.body}
		e.RequestContext.HTTP.Method = s.method
		e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}}}
		next := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			f.reads.Add(1)
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "read"}, nil
		}
		resp, err := m.HTTPAPI(f.mut, next)(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		hdr := http.Header{}
		for k, v := range resp.Headers {
			hdr.Set(k, v)
		}
		return answer{resp.StatusCode, hdr, resp.Body}
	}},
	{"rest", func(t *testing.T, f *fixture, m *mutation.Runner[types.TransactWriteItem], s sent) answer {
		e := events.APIGatewayProxyRequest{Resource: "/items", Path: "/items", HTTPMethod: s.method, MultiValueHeaders: headersOf(s), Body: s.body}
		// A Cognito user pool authorizer's claims, as API Gateway passes them.
		e.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": "alice", "email_verified": true}}
		next := func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			f.reads.Add(1)
			return events.APIGatewayProxyResponse{StatusCode: 200, Body: "read"}, nil
		}
		resp, err := m.REST(f.mut, next)(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		hdr := http.Header{}
		for k, v := range resp.Headers {
			hdr.Set(k, v)
		}
		return answer{resp.StatusCode, hdr, resp.Body}
	}},
	{"net/http", func(t *testing.T, f *fixture, m *mutation.Runner[types.TransactWriteItem], s sent) answer {
		mux := http.NewServeMux()
		next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { f.reads.Add(1); _, _ = io.WriteString(w, "read") })
		mux.Handle("/items", m.HTTP(f.mut, next))
		hr := httptest.NewRequest(s.method, "/items", strings.NewReader(s.body))
		hr.Header = headersOf(s)
		hr = hr.WithContext(mutation.ContextWithClaims(hr.Context(), map[string]string{"sub": "alice"}))
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, hr)
		return answer{w.Code, w.Header(), w.Body.String()}
	}},
}

// Each door runs a mutation exactly once, replays it byte for byte, and
// refuses as the seed did, with nothing run or recorded for a refusal.
func TestEachAdapterRunsAMutationExactlyOnce(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			f := newFixture(t)
			m := f.runner(mutation.Options{})
			key, id := uuid.NewString(), uuid.NewString()
			body := `{"id":"` + id + `","note":{"a":1,"b":[1.0,2]}}`

			first := a.send(t, f, m, sent{method: "POST", key: key, body: body})
			if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" || first.header.Get("Content-Type") != "application/json" {
				t.Fatalf("fresh: %d %v %s", first.status, first.header, first.body)
			}
			// The same request, its members reordered and a number spelled
			// otherwise: one payload by RFC 8785, so a replay.
			again := a.send(t, f, m, sent{method: "POST", key: key, body: `{"note":{"b":[1,2],"a":1},"id":"` + id + `"}`})
			if again.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: %d %v %s, want the first answer %s", again.status, again.header, again.body, first.body)
			}
			if got := a.send(t, f, m, sent{method: "POST", body: body}); got.status != 400 || got.body != seed400 {
				t.Fatalf("no key: %d %s, want the seed's 400", got.status, got.body)
			}
			if got := a.send(t, f, m, sent{method: "POST", key: key, body: `{"id":"` + uuid.NewString() + `"}`}); got.status != 409 || got.body != seed409 {
				t.Fatalf("reused key: %d %s, want the seed's 409", got.status, got.body)
			}
			if got := a.send(t, f, m, sent{method: "GET"}); got.status != 200 || got.body != "read" || f.reads.Load() != 1 {
				t.Fatalf("a GET goes to next: %d %s (%d reads)", got.status, got.body, f.reads.Load())
			}
			if n := f.runs.Load(); n != 1 {
				t.Fatalf("%d executions, want 1", n)
			}
			records := f.b.LedgerRecords(t)
			if len(records) != 1 || records[0].UserID != "alice" || records[0].Route != "/items" || records[0].Method != "POST" {
				t.Fatalf("records %+v, want one of alice's POST /items", records)
			}
		})
	}
}

// The checks before the flow, each refused with its own answer, none of
// them running or recording anything: the key stays free for the request
// as it should have been sent.
func TestRefusalsBeforeTheFlow(t *testing.T) {
	f := newFixture(t)
	m := f.runner(mutation.Options{MaxBodyBytes: 64})
	send := adapters[0].send
	key := uuid.NewString()
	tests := []struct {
		name   string
		s      sent
		status int
		code   errcode.Code
	}{
		{"bad key", sent{method: "POST", key: "not-a-uuid", body: `{"id":"a"}`}, 400, errcode.ValidationFailed},
		{"two keys", sent{method: "POST", key: key + ", " + key, body: `{"id":"a"}`}, 400, errcode.ValidationFailed},
		{"not JSON", sent{method: "POST", key: key, body: `{"id":"a"}`, header: map[string]string{"Content-Type": "text/plain"}}, 415, errcode.UnsupportedMediaType},
		{"latin-1", sent{method: "POST", key: key, body: `{"id":"a"}`, header: map[string]string{"Content-Type": "application/json; charset=latin-1"}}, 415, errcode.UnsupportedMediaType},
		{"too large", sent{method: "POST", key: key, body: `{"id":"` + strings.Repeat("a", 64) + `"}`}, 413, errcode.PayloadTooLarge},
		{"empty", sent{method: "POST", key: key, body: "  "}, 400, errcode.ValidationFailed},
		{"invalid JSON", sent{method: "POST", key: key, body: `{"id":"a",}`}, 400, errcode.ValidationFailed},
		{"duplicate names", sent{method: "POST", key: key, body: `{"id":"a","id":"b"}`}, 400, errcode.ValidationFailed},
		{"the mutation's own", sent{method: "POST", key: key, body: `{"x":1}`}, 400, errcode.ValidationFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := send(t, f, m, tt.s)
			if got.status != tt.status || !strings.Contains(got.body, `"error":"`+string(tt.code)+`"`) {
				t.Fatalf("%d %s, want %d %s", got.status, got.body, tt.status, tt.code)
			}
		})
	}
	if got := send(t, f, m, sent{method: "POST", key: key, body: `{"id":"a"}`}); got.status != 201 {
		t.Fatalf("the key after refusals: %d %s, want a fresh 201", got.status, got.body)
	}
	if n := f.runs.Load(); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
}

// No caller, no mutation: 401, and the user is never taken from anything
// but the verified claims.
func TestNoCallerIsRefused(t *testing.T) {
	f := newFixture(t)
	m := f.runner(mutation.Options{})
	e := events.APIGatewayV2HTTPRequest{RouteKey: "POST /items", RawPath: "/items", Body: `{"id":"a"}`,
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": uuid.NewString(), "x-user-id": "alice"}}
	e.RequestContext.HTTP.Method = "POST"
	resp, _ := m.HTTPAPI(f.mut, nil)(context.Background(), e)
	if resp.StatusCode != 401 || !strings.Contains(resp.Body, `"UNAUTHORIZED"`) || f.runs.Load() != 0 {
		t.Fatalf("%d %s (%d runs), want 401 and nothing run", resp.StatusCode, resp.Body, f.runs.Load())
	}
}

// A body API Gateway marked base64 is decoded before it is held to the
// limit and hashed, so the same JSON sent either way is one request.
func TestBase64BodiesAreTheSameRequest(t *testing.T) {
	f := newFixture(t)
	m := f.runner(mutation.Options{MaxBodyBytes: 100})
	key, body := uuid.NewString(), `{"id":"`+uuid.NewString()+`"}`
	plain := events.APIGatewayV2HTTPRequest{RouteKey: "POST /items", Body: body,
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": key}}
	plain.RequestContext.HTTP.Method = "POST"
	plain.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}}}
	encoded := plain
	encoded.Body, encoded.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(body)), true
	h := m.HTTPAPI(f.mut, nil)
	first, _ := h(context.Background(), encoded)
	second, _ := h(context.Background(), plain)
	if first.StatusCode != 201 || second.Body != first.Body || second.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("base64 then plain: %d %s / %d %s", first.StatusCode, first.Body, second.StatusCode, second.Body)
	}
	bad := encoded
	bad.Body = "!!!"
	if resp, _ := h(context.Background(), bad); resp.StatusCode != 400 {
		t.Fatalf("bad base64: %d %s", resp.StatusCode, resp.Body)
	}
	big := encoded
	big.Body = base64.StdEncoding.EncodeToString([]byte(`{"id":"` + strings.Repeat("x", 100) + `"}`))
	if resp, _ := h(context.Background(), big); resp.StatusCode != 413 {
		t.Fatalf("a decoded body over the limit: %d %s", resp.StatusCode, resp.Body)
	}
}

// Options change the envelope, one rule each.
func TestOptions(t *testing.T) {
	send := adapters[2].send // net/http: the options are the adapters' alike
	t.Run("methods: PUT needs no key and goes to next", func(t *testing.T) {
		f := newFixture(t)
		m := f.runner(mutation.Options{Methods: []string{"POST"}})
		if got := send(t, f, m, sent{method: "PUT", body: `{"id":"a"}`}); got.status != 200 || f.reads.Load() != 1 || f.runs.Load() != 0 {
			t.Fatalf("%d %s", got.status, got.body)
		}
	})
	t.Run("key: from another header, with a prefix", func(t *testing.T) {
		f := newFixture(t)
		m := f.runner(mutation.Options{Key: func(r *mutation.Request) (string, error) {
			v := r.Header.Get("X-Request-Id")
			if v == "" {
				return "", errcode.Invalid("X-Request-Id is required", errcode.Field{Field: "X-Request-Id"})
			}
			return "items#" + v, nil
		}})
		got := send(t, f, m, sent{method: "POST", body: `{"id":"a"}`, header: map[string]string{"X-Request-Id": "order-17"}})
		again := send(t, f, m, sent{method: "POST", body: `{"id":"a"}`, header: map[string]string{"X-Request-Id": "order-17"}})
		if got.status != 201 || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%d %s / %v", got.status, got.body, again.header)
		}
		if r := f.b.LedgerRecords(t); len(r) != 1 || r[0].Key != "items#order-17" {
			t.Fatalf("records %+v", r)
		}
	})
	t.Run("payload: a subset is what a retry must repeat", func(t *testing.T) {
		f := newFixture(t)
		m := f.runner(mutation.Options{Payload: func(r *mutation.Request) ([]byte, error) {
			id, err := bodyID(r.Body)
			return fmt.Appendf(nil, `{"id":%q}`, id), err
		}})
		key := uuid.NewString()
		first := send(t, f, m, sent{method: "POST", key: key, body: `{"id":"a","sentAt":"10:00"}`})
		retry := send(t, f, m, sent{method: "POST", key: key, body: `{"id":"a","sentAt":"10:05"}`})
		other := send(t, f, m, sent{method: "POST", key: key, body: `{"id":"b","sentAt":"10:05"}`})
		if first.status != 201 || retry.body != first.body || other.status != 409 {
			t.Fatalf("%d / %d %s / %d", first.status, retry.status, retry.body, other.status)
		}
	})
	t.Run("on replay and report", func(t *testing.T) {
		f := newFixture(t)
		var mu sync.Mutex
		var reports []mutation.Report
		m := f.runner(mutation.Options{
			OnReplay: func(_ *mutation.Request, resp *mutation.Response) { resp.Header.Set("X-Replay", "1") },
			Report: func(_ context.Context, _ *mutation.Request, rep mutation.Report) {
				mu.Lock()
				reports = append(reports, rep)
				mu.Unlock()
			},
		})
		key := uuid.NewString()
		send(t, f, m, sent{method: "POST", key: key, body: `{"id":"a"}`})
		if got := send(t, f, m, sent{method: "POST", key: key, body: `{"id":"a"}`}); got.header.Get("X-Replay") != "1" {
			t.Fatalf("OnReplay: %v", got.header)
		}
		send(t, f, m, sent{method: "POST", body: `{"id":"a"}`})
		want := []mutation.Report{
			{Summary: idempotency.Summary{Outcome: idempotency.Executed}, KeyPrefix: key[:8]},
			{Summary: idempotency.Summary{Outcome: idempotency.Replayed, FromCache: true}, KeyPrefix: key[:8]},
			{Summary: idempotency.Summary{Outcome: mutation.Refused}, Code: errcode.ValidationFailed},
		}
		if fmt.Sprint(reports) != fmt.Sprint(want) {
			t.Fatalf("reports %+v, want %+v", reports, want)
		}
	})
	t.Run("statuses: an application's own code", func(t *testing.T) {
		f := newFixture(t)
		const gone errcode.Code = "ITEM_GONE"
		m := f.runner(mutation.Options{Statuses: map[errcode.Code]int{gone: 410}})
		f.mut = func(context.Context, *mutation.Request) (mutation.Plan[types.TransactWriteItem], error) {
			return mutation.Plan[types.TransactWriteItem]{}, errcode.New(gone, "The item is gone")
		}
		if got := send(t, f, m, sent{method: "POST", key: uuid.NewString(), body: `{}`}); got.status != 410 || got.body != `{"error":"ITEM_GONE","message":"The item is gone"}` {
			t.Fatalf("%d %s", got.status, got.body)
		}
		if s, ok := (mutation.Options{Statuses: map[errcode.Code]int{errcode.Conflict: 0}}).Status(errcode.Conflict); ok {
			t.Fatalf("a code taken out still answers %d", s)
		}
	})
}

// A failed business condition records nothing: the answer is the plan's
// Refused (409 CONFLICT without one), and the key is free for a retry.
func TestRejectedWritesRecordNothing(t *testing.T) {
	f := newFixture(t)
	send := adapters[0].send
	taken := uuid.NewString()
	plain := f.runner(mutation.Options{})
	if got := send(t, f, plain, sent{method: "POST", key: uuid.NewString(), body: `{"id":"` + taken + `"}`}); got.status != 201 {
		t.Fatalf("%d %s", got.status, got.body)
	}
	key := uuid.NewString()
	if got := send(t, f, plain, sent{method: "POST", key: key, body: `{"id":"` + taken + `"}`}); got.status != 409 || !strings.Contains(got.body, `"CONFLICT"`) {
		t.Fatalf("default: %d %s", got.status, got.body)
	}
	var failed []int
	inner := f.mut
	f.mut = func(ctx context.Context, r *mutation.Request) (mutation.Plan[types.TransactWriteItem], error) {
		p, err := inner(ctx, r)
		p.Refused = func(_ context.Context, refused []idempotency.Refusal) error {
			failed = nil
			for _, r := range refused {
				failed = append(failed, r.Index)
			}
			return errcode.New(errcode.Conflict, "This id is taken")
		}
		return p, err
	}
	if got := send(t, f, plain, sent{method: "POST", key: key, body: `{"id":"` + taken + `"}`}); got.status != 409 || !strings.Contains(got.body, `"This id is taken"`) || fmt.Sprint(failed) != "[0]" {
		t.Fatalf("worded: %d %s, failed %v", got.status, got.body, failed)
	}
	if got := send(t, f, plain, sent{method: "POST", key: key, body: `{"id":"` + uuid.NewString() + `"}`}); got.status != 201 {
		t.Fatalf("the key after a rejected write: %d %s, want a fresh 201", got.status, got.body)
	}
}

// A store that fails answers 503 with Retry-After for a transient failure,
// 500 otherwise, each telling the client to retry with the same key.
func TestStoreFailuresAreRetryable(t *testing.T) {
	f := newFixture(t)
	m := f.runner(mutation.Options{})
	send := adapters[0].send
	f.b.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.ServiceError, Code: "ThrottlingException", Status: 400, Times: 3})
	key := uuid.NewString()
	got := send(t, f, m, sent{method: "POST", key: key, body: `{"id":"a"}`})
	if got.status != 503 || got.header.Get("Retry-After") != "1" || !strings.Contains(got.body, "retry with the same Idempotency-Key") {
		t.Fatalf("throttled: %d %v %s", got.status, got.header, got.body)
	}
	f.b.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.ServiceError, Code: "ValidationException", Status: 400, Times: 1})
	if got := send(t, f, m, sent{method: "POST", key: key, body: `{"id":"a"}`}); got.status != 500 || !strings.Contains(got.body, `"INTERNAL"`) {
		t.Fatalf("misconfigured: %d %s", got.status, got.body)
	}
	if got := send(t, f, m, sent{method: "POST", key: key, body: `{"id":"a"}`}); got.status != 201 {
		t.Fatalf("after the failures: %d %s", got.status, got.body)
	}
}

// A key is bound to the resource its route's parameters name: the same key
// and body sent for another id on "/items/{id}" is a reused key, never the
// first item's answer replayed; sent again for the same id, it replays.
func TestAKeyIsBoundToItsPathParameters(t *testing.T) {
	f := newFixture(t)
	h := f.runner(mutation.Options{}).HTTPAPI(f.mut, nil)
	key, body := uuid.NewString(), `{"id":"`+uuid.NewString()+`"}`
	send := func(id string) events.APIGatewayV2HTTPResponse {
		e := events.APIGatewayV2HTTPRequest{RouteKey: "PATCH /items/{id}", RawPath: "/items/" + id, Body: body,
			PathParameters: map[string]string{"id": id},
			Headers:        map[string]string{"content-type": "application/json", "idempotency-key": key}}
		e.RequestContext.HTTP.Method = "PATCH"
		e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}}}
		resp, err := h(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := send("a/1")
	if first.StatusCode != 201 {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	if other := send("b"); other.StatusCode != 409 || !strings.Contains(other.Body, `"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD"`) {
		t.Fatalf("the same key for another id: %d %s, want the 409 of a reused key", other.StatusCode, other.Body)
	}
	if again := send("a/1"); again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("the same key for the same id: %d %s, want the replay", again.StatusCode, again.Body)
	}
	if f.runs.Load() != 1 {
		t.Fatalf("the mutation ran %d times", f.runs.Load())
	}
	if recs := f.b.LedgerRecords(t); len(recs) != 1 || recs[0].Route != "/items/a%2F1" {
		t.Fatalf("records %+v, want one naming /items/a%%2F1", recs)
	}
}

// A DELETE may come with no body: nothing sent is an empty payload, with
// a Content-Type or without one (clients that set one on every request
// are common), run once and replayed; a body that is sent is held to the
// rules of any other.
func TestADeleteMayComeWithoutABody(t *testing.T) {
	f := newFixture(t)
	var runs atomic.Int32
	del := func(_ context.Context, r *mutation.Request) (mutation.Plan[types.TransactWriteItem], error) {
		return mutation.Plan[types.TransactWriteItem]{Execute: func(context.Context, time.Time) (idempotency.Execution[types.TransactWriteItem], error) {
			n := runs.Add(1)
			return idempotency.Execution[types.TransactWriteItem]{
				Response: idempotency.Response{StatusCode: 200, Body: fmt.Appendf(nil, `{"deleted":%q,"run":%d}`, r.PathParams["id"], n)},
				Writes:   []types.TransactWriteItem{f.putNew(r.User, "deleted-"+r.PathParams["id"])},
			}, nil
		}}, nil
	}
	h := f.runner(mutation.Options{}).HTTPAPI(del, nil)
	send := func(key, contentType, body string) events.APIGatewayV2HTTPResponse {
		e := events.APIGatewayV2HTTPRequest{RouteKey: "DELETE /items/{id}", RawPath: "/items/x", Body: body,
			PathParameters: map[string]string{"id": "x"}, Headers: map[string]string{"idempotency-key": key}}
		if contentType != "" {
			e.Headers["content-type"] = contentType
		}
		e.RequestContext.HTTP.Method = "DELETE"
		e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}}}
		resp, err := h(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	key := uuid.NewString()
	first := send(key, "", "")
	if first.StatusCode != 200 {
		t.Fatalf("a DELETE without a body: %d %s", first.StatusCode, first.Body)
	}
	if again := send(key, "", ""); again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("sent again: %d %s", again.StatusCode, again.Body)
	}
	if other := send(key, "application/json", `{"why":"x"}`); other.StatusCode != 409 {
		t.Fatalf("the same key with a body: %d %s, want 409", other.StatusCode, other.Body)
	}
	if typed := send(key, "application/json", ""); typed.Body != first.Body || typed.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("sent again with a Content-Type and no body: %d %s, want the replay", typed.StatusCode, typed.Body)
	}
	if text := send(uuid.NewString(), "text/plain", `x`); text.StatusCode != 415 {
		t.Fatalf("a DELETE with a body not JSON: %d %s, want 415", text.StatusCode, text.Body)
	}
	if runs.Load() != 1 {
		t.Fatalf("the DELETE ran %d times", runs.Load())
	}
}

// A request's own body limit replaces the runner's, so that one Runner
// serves a route that takes more; without one, the runner's holds.
func TestARequestsBodyLimit(t *testing.T) {
	f := newFixture(t)
	m := f.runner(mutation.Options{MaxBodyBytes: 20})
	body := `{"id":"` + uuid.NewString() + `"}`
	run := func(limit int) mutation.Response {
		r := &mutation.Request{Method: "POST", Route: "/items", Header: headersOf(sent{key: uuid.NewString()}),
			Body: []byte(body), Claims: map[string]string{"sub": "alice"}, MaxBodyBytes: limit}
		resp, _ := m.Run(context.Background(), r, f.mut)
		return resp
	}
	if resp := run(0); resp.StatusCode != 413 || !strings.Contains(string(resp.Body), "exceeds 20 bytes") {
		t.Fatalf("the runner's limit: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := run(100); resp.StatusCode != 201 {
		t.Fatalf("the request's limit: %d %s", resp.StatusCode, resp.Body)
	}
}

// Options.Answers words an error as the Runner of those options does.
func TestAnswersAreTheRunners(t *testing.T) {
	o := mutation.Options{Statuses: map[errcode.Code]int{"TEAPOT": http.StatusTeapot}}
	m := newFixture(t).runner(o)
	for _, err := range []error{errcode.New("TEAPOT", "short and stout"), errcode.New(errcode.NotFound, ""), fmt.Errorf("boom")} {
		read, mut := o.Answers().Read(err), o.Answers().Mutation(err)
		if wr, wm := m.AnswerRead(err), m.AnswerMutation(err); read.StatusCode != wr.StatusCode || string(read.Body) != string(wr.Body) ||
			mut.StatusCode != wm.StatusCode || string(mut.Body) != string(wm.Body) {
			t.Fatalf("%v: answers %d %s / %d %s, the runner's %d %s / %d %s", err, read.StatusCode, read.Body, mut.StatusCode, mut.Body, wr.StatusCode, wr.Body, wm.StatusCode, wm.Body)
		}
	}
	if resp := o.Answers().Read(errcode.New("TEAPOT", "x")); resp.StatusCode != http.StatusTeapot {
		t.Fatalf("%d", resp.StatusCode)
	}
}
