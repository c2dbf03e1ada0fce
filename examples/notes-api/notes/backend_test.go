package notes_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/sivchari/kumo"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// The backend: the embedded kumo server by default, or the endpoint CI
// names (moto, dynoxide), which DYNAMODB_BACKEND names.
const (
	envEndpoint = "DYNAMODB_ENDPOINT"
	envBackend  = "DYNAMODB_BACKEND"
)

var (
	embeddedOnce sync.Once
	embeddedURL  string
)

// backend is a DynamoDB endpoint with a fresh notes table and ledger, and
// the transport that carries every call of its client.
type backend struct {
	client             *dynamodb.Client
	calls              *transport
	notesTable, ledger string
	name               string
	ctx                context.Context
}

// start returns a backend with empty tables of unique names, removed when
// t ends.
func start(t *testing.T) *backend {
	t.Helper()
	endpoint, name := os.Getenv(envEndpoint), os.Getenv(envBackend)
	if endpoint == "" {
		// One embedded server per test binary; each test its own tables.
		embeddedOnce.Do(func() { embeddedURL = kumo.NewServer().URL })
		endpoint, name = embeddedURL, "kumo"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64 // the race tests send many calls at once
	tr := &transport{base: base, calls: map[string]int{}}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	if err != nil {
		t.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint, o.HTTPClient = aws.String(endpoint), &http.Client{Transport: tr}
	})
	suffix := uuid.NewString()[:8]
	b := &backend{client: client, calls: tr, notesTable: "notes-" + suffix, ledger: "ledger-" + suffix, name: name, ctx: ctx}
	b.createTables(t)
	tr.reset()
	return b
}

func (b *backend) createTables(t *testing.T) {
	t.Helper()
	if err := dynamodbstore.CreateTable(b.ctx, b.client, notes.TableInput(b.notesTable), nil); err != nil {
		t.Fatalf("create notes table on %s: %v", b.name, err)
	}
	if err := dynamodbstore.CreateTable(b.ctx, b.client, dynamodbstore.TableInput(b.ledger), dynamodbstore.TTLInput(b.ledger)); err != nil {
		t.Fatalf("create ledger on %s: %v", b.name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, name := range []string{b.notesTable, b.ledger} {
			if _, err := b.client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
				t.Errorf("delete table on %s: %v", b.name, err)
			}
		}
	})
}

// env is one execution environment: a Service with a replay cache of its
// own, over the backend's tables.
func (b *backend) env() *notes.Service {
	return notes.New(notes.Config{Client: b.client, NotesTable: b.notesTable, LedgerTable: b.ledger, CacheBytes: 1 << 20})
}

// storedNote is the caller's note as stored (strongly consistent), nil if
// there is none.
func (b *backend) storedNote(t *testing.T, user, id string) map[string]string {
	t.Helper()
	out, err := b.client.GetItem(b.ctx, &dynamodb.GetItemInput{
		TableName: aws.String(b.notesTable), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{notes.UserAttr: &types.AttributeValueMemberS{Value: user}, notes.IDAttr: &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	n := map[string]string{}
	for k, v := range out.Item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n[k] = v.Value
		case *types.AttributeValueMemberN:
			n[k] = v.Value
		}
	}
	return n
}

// records is every ledger record, as stored.
func (b *backend) records(t *testing.T) []idempotency.Record {
	t.Helper()
	recs, err := dynamodbstore.New(b.client, b.ledger).All(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// transport counts the client's calls by operation, and can lose the
// answers of TransactWriteItems: the call reaches the server and takes
// effect, then the client sees a reset connection, as when a network drops
// an answer, and its SDK retries.
type transport struct {
	base       http.RoundTripper
	mu         sync.Mutex
	calls      map[string]int
	loseAnswer atomic.Int32 // TransactWriteItems answers still to lose
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	op = op[strings.LastIndex(op, ".")+1:]
	tr.mu.Lock()
	tr.calls[op]++
	tr.mu.Unlock()
	if op != "TransactWriteItems" || tr.loseAnswer.Add(-1) < 0 {
		return tr.base.RoundTrip(req)
	}
	resp, err := tr.base.RoundTrip(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

// snapshot is the calls so far, by operation, and their total.
func (tr *transport) snapshot() (map[string]int, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out, total := map[string]int{}, 0
	for op, n := range tr.calls {
		out[op] = n
		total += n
	}
	return out, total
}

func (tr *transport) reset() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	clear(tr.calls)
	tr.loseAnswer.Store(0)
}

// answer is what a client got.
type answer struct {
	status   int
	body     string
	replayed bool
}

// request is an API Gateway HTTP API event of one of the notes API's
// routes, from user (the authorizer's verified sub), under key ("" for
// none).
func request(routeKey, id, user, key, body string) events.APIGatewayV2HTTPRequest {
	method, path, _ := strings.Cut(routeKey, " ")
	e := events.APIGatewayV2HTTPRequest{
		RouteKey: routeKey, RawPath: strings.Replace(path, "{id}", id, 1), Body: body,
		Headers: map[string]string{"content-type": "application/json"},
	}
	if id != "" {
		e.PathParameters = map[string]string{"id": id}
	}
	if key != "" {
		e.Headers["idempotency-key"] = key
	}
	if body == "" && method == http.MethodDelete {
		delete(e.Headers, "content-type")
	}
	e.RequestContext.HTTP.Method = method
	e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": user}},
	}
	return e
}

// send hands e to svc, as Lambda would.
func send(t *testing.T, svc *notes.Service, e events.APIGatewayV2HTTPRequest) answer {
	t.Helper()
	resp, err := svc.Handle(context.Background(), e)
	if err != nil { // Errorf, not Fatalf: the race tests send from goroutines
		t.Errorf("handler error: %v", err)
	}
	if ct := resp.Headers["Content-Type"]; ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return answer{status: resp.StatusCode, body: resp.Body, replayed: resp.Headers["Idempotent-Replayed"] == "true"}
}
