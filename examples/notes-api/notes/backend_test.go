package notes_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
)

// backend is the test kit's DynamoDB (the embedded server, or the
// endpoint CI names in DYNAMODB_ENDPOINT) with a fresh notes table and
// ledger, and the transport that carries every call of its client.
type backend struct {
	client             *dynamodb.Client
	calls              counter
	notesTable, ledger string
	name               string
	ctx                context.Context
}

// start returns a backend with empty tables of unique names, removed when
// t ends.
func start(t *testing.T) *backend {
	t.Helper()
	kit := dynamotest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return &backend{
		client: kit.Client, calls: counter{kit.Transport}, name: kit.Name, ctx: ctx,
		notesTable: kit.CreateTable(t, notes.TableInput("notes"), nil),
		ledger:     kit.LedgerTable(t),
	}
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

// counter is the kit's transport, with the counts as these tests read them.
type counter struct{ *dynamotest.Transport }

// snapshot is the calls so far, by operation, and their total.
func (c counter) snapshot() (map[string]int, int) { return c.Calls(), c.Total() }

// reset forgets the counts and the faults.
func (c counter) reset() { c.Reset() }

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
