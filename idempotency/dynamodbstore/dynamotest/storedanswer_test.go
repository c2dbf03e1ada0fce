package dynamotest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

// An orders service, as a team writes it: POST /orders validates its body
// and puts the order; DELETE /orders/{id} reads the order and answers 404
// when it is gone, else deletes it. Its retries must get the first answer
// whatever this code would say now.

var (
	errNoOrder      = errcode.New("ORDER_NOT_FOUND", "No order with this id")
	errNeedCurrency = errcode.Invalid("currency is required", errcode.Field{Field: "currency"})
)

type orders struct {
	b        *dynamotest.Backend
	ledger   string
	table    string
	mutation atomic.Int64 // calls of a Mutation, over every environment
}

func newOrders(t *testing.T) *orders {
	b := dynamotest.Start(t)
	return &orders{b: b, ledger: b.LedgerTable(t), table: b.CreateTable(t, tasksTable("orders"), nil)}
}

// env is one execution environment, on this deploy's rules: strict is a
// deploy that requires a currency on a new order.
func (o *orders) env(strict bool) func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	runner := dynamodbstore.NewRunner(o.b.Client, o.ledger, idempotency.Options{Cache: idempotency.NewReplayCache(1 << 20)},
		mutation.Options{Statuses: map[errcode.Code]int{errNoOrder.Code: http.StatusNotFound}})
	create := func(_ context.Context, r *mutation.Request) (dynamodbstore.Plan, error) {
		o.mutation.Add(1)
		var in struct {
			ID       string `json:"id"`
			Currency string `json:"currency"`
		}
		if err := json.Unmarshal(r.Body, &in); err != nil || in.ID == "" {
			return dynamodbstore.Plan{}, errcode.Invalid("id is required", errcode.Field{Field: "id"})
		}
		if strict && in.Currency == "" {
			return dynamodbstore.Plan{}, errNeedCurrency
		}
		return dynamodbstore.Plan{Status: http.StatusCreated, Body: map[string]string{"id": in.ID}, Writes: []dynamodbstore.Write{{Put: &types.Put{
			TableName: aws.String(o.table), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: in.ID}},
		}}}}, nil
	}
	remove := func(_ context.Context, r *mutation.Request) (dynamodbstore.Plan, error) {
		o.mutation.Add(1)
		id := r.PathParams["id"]
		return dynamodbstore.Plan{Execute: func(ctx context.Context, now time.Time) (dynamodbstore.Execution, error) {
			key := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}
			got, err := o.b.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(o.table), Key: key, ConsistentRead: aws.Bool(true)})
			if err != nil {
				return dynamodbstore.Execution{}, dynamodbstore.Classify(err)
			}
			if got.Item == nil {
				return dynamodbstore.Execution{}, errNoOrder
			}
			return dynamodbstore.Execution{
				Response: idempotency.Response{StatusCode: http.StatusOK, Body: []byte(`{"id":"` + id + `","deletedAt":"` + now.Format(time.RFC3339Nano) + `"}`)},
				Writes:   []dynamodbstore.Write{{Delete: &types.Delete{TableName: aws.String(o.table), Key: key}}},
			}, nil
		}}, nil
	}
	creates, deletes := runner.HTTPAPI(create, nil), runner.HTTPAPI(remove, nil)
	return func(e events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		h := creates
		if e.RequestContext.HTTP.Method == http.MethodDelete {
			h = deletes
		}
		resp, err := h(context.Background(), e)
		if err != nil {
			panic(err) // the envelope answers every failure
		}
		return resp
	}
}

func orderRequest(method, id, key, body string) events.APIGatewayV2HTTPRequest {
	e := events.APIGatewayV2HTTPRequest{
		RouteKey: method + " /orders", RawPath: "/orders",
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": key},
		Body:    body,
	}
	if method == http.MethodDelete {
		e.RouteKey, e.RawPath, e.PathParameters = "DELETE /orders/{id}", "/orders/"+id, map[string]string{"id": id}
	}
	e.RequestContext.HTTP.Method = method
	e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}},
	}
	return e
}

// sendLost sends e with every attempt of its commit applied and its answer
// lost: the client is told the change may have been stored.
func (o *orders) sendLost(t *testing.T, env func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse, e events.APIGatewayV2HTTPRequest) {
	t.Helper()
	o.b.Transport.LoseAnswers("TransactWriteItems", 3)
	if got := env(e); got.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the lost answer: %d %s, want 503", got.StatusCode, got.Body)
	}
	o.b.Transport.Reset()
}

// A retry from a fresh environment, after the first attempt committed and
// its answer was lost, gets the first answer replayed, where the code now
// refuses it: a DELETE whose order is gone (its Execute answers 404), and
// a POST under a deploy that tightened validation (its Mutation answers
// 400). Without a record, the same refusals stand.
func TestTheStoredAnswerWinsOverARefusal(t *testing.T) {
	o := newOrders(t)
	id := uuid.NewString()
	create, remove := uuid.NewString(), uuid.NewString()
	before := o.env(false)
	if got := before(orderRequest(http.MethodPost, "", create, `{"id":"`+id+`"}`)); got.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", got.StatusCode, got.Body)
	}
	o.sendLost(t, before, orderRequest(http.MethodDelete, id, remove, ""))
	stored, found, err := dynamodbstore.New(o.b.Client, o.ledger).Get(context.Background(), "alice", remove)
	if err != nil || !found || stored.StatusCode != http.StatusOK {
		t.Fatalf("the DELETE's record: %+v %v %v", stored, found, err)
	}

	after := o.env(true) // a fresh environment, on a deploy that wants a currency
	cases := []struct {
		name       string
		req        events.APIGatewayV2HTTPRequest
		wantStatus int
		wantBody   string
		replayed   bool
	}{
		{"DELETE of a gone order, retried", orderRequest(http.MethodDelete, id, remove, ""), http.StatusOK, string(stored.ResponseBody), true},
		{"POST valid then, retried", orderRequest(http.MethodPost, "", create, `{"id":"`+id+`"}`), http.StatusCreated, `{"id":"` + id + `"}`, true},
		{"DELETE of a gone order, new key", orderRequest(http.MethodDelete, id, uuid.NewString(), ""), http.StatusNotFound, `{"error":"ORDER_NOT_FOUND","message":"No order with this id"}`, false},
		{"POST invalid now, new key", orderRequest(http.MethodPost, "", uuid.NewString(), `{"id":"`+id+`"}`), http.StatusBadRequest, "", false},
		{"POST retried with another body", orderRequest(http.MethodPost, "", create, `{"id":"`+id+`","currency":"EUR"}`), http.StatusConflict,
			`{"error":"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD","message":"Idempotency key already used with a different payload"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := after(tc.req)
			if got.StatusCode != tc.wantStatus || (tc.wantBody != "" && got.Body != tc.wantBody) {
				t.Fatalf("%d %s, want %d %s", got.StatusCode, got.Body, tc.wantStatus, tc.wantBody)
			}
			if replayed := got.Headers[mutation.ReplayedHeader] == "true"; replayed != tc.replayed {
				t.Fatalf("replayed %v, want %v", replayed, tc.replayed)
			}
		})
	}
}

// What the rule costs: a fresh mutation is one call and a warm replay none
// (its Mutation does not run); a refusal with no record behind it is the
// Mutation's own reads and one GetItem of the ledger.
func TestTheStoredAnswerCostsNothingOnTheCommonPaths(t *testing.T) {
	o := newOrders(t)
	env := o.env(true)
	key, id := uuid.NewString(), uuid.NewString()
	body := `{"id":"` + id + `","currency":"EUR"}`
	steps := []struct {
		name      string
		req       events.APIGatewayV2HTTPRequest
		status    int
		calls     map[string]int
		mutations int64
	}{
		{"fresh", orderRequest(http.MethodPost, "", key, body), http.StatusCreated, map[string]int{"TransactWriteItems": 1}, 1},
		{"warm replay", orderRequest(http.MethodPost, "", key, body), http.StatusCreated, map[string]int{}, 0},
		{"refused by the Mutation", orderRequest(http.MethodPost, "", uuid.NewString(), `{"id":"x"}`), http.StatusBadRequest, map[string]int{"GetItem": 1}, 1},
		{"refused by the Execute", orderRequest(http.MethodDelete, uuid.NewString(), uuid.NewString(), ""), http.StatusNotFound, map[string]int{"GetItem": 2}, 1},
	}
	for _, s := range steps {
		o.b.Transport.Reset()
		before := o.mutation.Load()
		got := env(s.req)
		calls := o.b.Transport.Calls()
		if got.StatusCode != s.status || !sameCalls(calls, s.calls) || o.mutation.Load()-before != s.mutations {
			t.Errorf("%s: %d %s, calls %v, %d Mutation calls; want %d, %v, %d", s.name, got.StatusCode, got.Body, calls, o.mutation.Load()-before, s.status, s.calls, s.mutations)
		}
	}
}

func sameCalls(got, want map[string]int) bool {
	for op, n := range got {
		if want[op] != n {
			return false
		}
	}
	for op, n := range want {
		if got[op] != n {
			return false
		}
	}
	return true
}
