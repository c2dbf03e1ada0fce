package dynamotest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

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

// These tests are written as a team would write its own, with the public
// packages and the kit alone: a tasks API whose PATCH renames a task if it
// is still at the version the client read.

func tasksTable(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
	}
}

var (
	errNoTask = errcode.New("TASK_NOT_FOUND", "No task with this id; nothing was stored")
	errStale  = errcode.New("TASK_VERSION_CONFLICT", "The task has changed since the version sent; nothing was stored")
)

// rename is PATCH /tasks/{id} with {"title":…,"version":…} (parsing left
// out: the path's id is the task, the body's version 1).
func rename(tasks string) dynamodbstore.Mutation {
	return func(_ context.Context, r *mutation.Request) (dynamodbstore.Plan, error) {
		id := r.PathParams["id"]
		return dynamodbstore.Plan{
			Body: map[string]any{"id": id, "version": 2},
			Writes: []dynamodbstore.Write{{Update: &types.Update{
				TableName: aws.String(tasks), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
				UpdateExpression:    aws.String("SET version = :next"),
				ConditionExpression: aws.String("version = :seen"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":seen": &types.AttributeValueMemberN{Value: "1"}, ":next": &types.AttributeValueMemberN{Value: "2"},
				},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}}},
			Refused: func(_ context.Context, refused []idempotency.Refusal) error {
				if refused[0].Found {
					return errStale
				}
				return errNoTask
			},
		}, nil
	}
}

// handler is one execution environment's Lambda handler.
func handler(b *dynamotest.Backend, ledger, tasks string) mutation.HTTPAPIHandler {
	runner := dynamodbstore.NewRunner(b.Client, ledger, idempotency.Options{Cache: idempotency.NewReplayCache(1 << 20)},
		mutation.Options{Statuses: map[errcode.Code]int{errNoTask.Code: 404, errStale.Code: 409}})
	return runner.HTTPAPI(rename(tasks), nil)
}

func patch(id, key string) events.APIGatewayV2HTTPRequest {
	e := events.APIGatewayV2HTTPRequest{
		RouteKey: "PATCH /tasks/{id}", RawPath: "/tasks/" + id, PathParameters: map[string]string{"id": id},
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": key},
		Body:    `{"title":"Errands","version":1}`,
	}
	e.RequestContext.HTTP.Method = http.MethodPatch
	e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}},
	}
	return e
}

func taskVersion(t *testing.T, b *dynamotest.Backend, tasks, id string) string {
	t.Helper()
	out, err := b.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tasks), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := out.Item["version"].(*types.AttributeValueMemberN)
	if n == nil {
		t.Fatalf("task %s has no version: %v", id, out.Item)
	}
	return n.Value
}

func putTask(t *testing.T, b *dynamotest.Backend, tasks, id string) {
	t.Helper()
	_, err := b.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tasks), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: id}, "version": &types.AttributeValueMemberN{Value: "1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// The answer of every attempt the SDK makes is lost after the commit: the
// client is told the change may have been stored, and its retry, in
// another execution environment, gets the one commit's answer.
func TestLostAnswerRetriedFromAFreshHandler(t *testing.T) {
	b := dynamotest.Start(t)
	ledger, tasks := b.LedgerTable(t), b.CreateTable(t, tasksTable("tasks"), nil)
	id, key := uuid.NewString(), uuid.NewString()
	putTask(t, b, tasks, id)
	ctx := context.Background()

	b.Transport.LoseAnswers("TransactWriteItems", 3)
	first, _ := handler(b, ledger, tasks)(ctx, patch(id, key))
	if first.StatusCode != 503 || !strings.Contains(first.Body, "may have been stored") || strings.Contains(first.Body, "nothing was stored") {
		t.Fatalf("first answer %d %s, want a 503 that says the change may have been stored", first.StatusCode, first.Body)
	}
	// The first attempt committed. The SDK's retries carry its
	// ClientRequestToken: DynamoDB and dynoxide answer them 200 without
	// applying them again, kumo fails their condition. Either way the
	// task moved one version, not three.
	if n := b.Transport.Succeeded("TransactWriteItems"); n < 1 {
		t.Errorf("%d TransactWriteItems answered 200, want the first attempt's at least", n)
	}
	if v := taskVersion(t, b, tasks, id); v != "2" {
		t.Errorf("task at version %s after the lost answers, want 2: one commit", v)
	}
	b.Transport.Reset()
	again, _ := handler(b, ledger, tasks)(ctx, patch(id, key))
	if again.StatusCode != 200 || again.Headers[mutation.ReplayedHeader] != "true" || again.Body != `{"id":"`+id+`","version":2}` {
		t.Fatalf("retry: %d %v %s, want the commit's 200, replayed", again.StatusCode, again.Headers, again.Body)
	}
	// One TransactWriteItems finds the key's record; a backend that does
	// not return it with the failed condition (kumo) costs a read of it.
	if calls := b.Transport.Calls(); calls["TransactWriteItems"] != 1 || calls["GetItem"] > 1 || b.Transport.Total() > 2 {
		t.Errorf("retry's calls %v, want one TransactWriteItems and at most one GetItem", calls)
	}
}

// A refused PATCH is a 404 for a missing task and a 409 for a stale
// version, whether or not the backend returns the item with the failed
// condition (kumo does not, DynamoDB does; NoOldItems takes it out).
func TestRefusalMappedTo404Or409(t *testing.T) {
	for _, oldItems := range []bool{true, false} {
		b := dynamotest.Start(t)
		ledger, tasks := b.LedgerTable(t), b.CreateTable(t, tasksTable("tasks"), nil)
		stale := uuid.NewString()
		putTask(t, b, tasks, stale)
		h := handler(b, ledger, tasks)
		if first, _ := h(context.Background(), patch(stale, uuid.NewString())); first.StatusCode != 200 {
			t.Fatalf("first PATCH: %d %s", first.StatusCode, first.Body)
		}
		for id, want := range map[string]int{uuid.NewString(): 404, stale: 409} {
			if !oldItems {
				b.Transport.Inject(dynamotest.Fault{Op: "TransactWriteItems", Kind: dynamotest.NoOldItems, Times: 1})
			}
			got, _ := h(context.Background(), patch(id, uuid.NewString()))
			if got.StatusCode != want {
				t.Errorf("old items %v: %d %s, want %d", oldItems, got.StatusCode, got.Body, want)
			}
		}
	}
}

// The kit's transport: the Nth call faulted, throttling, counts.
func TestTransportFaultsTheNthCall(t *testing.T) {
	b := dynamotest.Start(t)
	tasks := b.CreateTable(t, tasksTable("tasks"), nil)
	if n := b.Transport.Total(); n != 0 {
		t.Fatalf("%d calls counted before the test made any: the kit's own must not count", n)
	}
	ctx := context.Background()
	get := func() error {
		_, err := b.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tasks), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "t"}}})
		return err
	}
	f := b.Transport.Inject(dynamotest.Fault{Op: "GetItem", Kind: dynamotest.ServiceError, Code: "ThrottlingException", Status: 400, After: 1, Times: 3})
	if err := get(); err != nil || f.Fired() != 0 {
		t.Fatalf("first call: %v, fired %d; want it through", err, f.Fired())
	}
	if err := get(); err == nil || !dynamodbstore.IsThrottle(err) || f.Fired() != 3 {
		t.Fatalf("second call: %v, fired %d; want three throttled attempts", err, f.Fired())
	}
	if calls := b.Transport.Calls(); calls["GetItem"] != 4 || b.Transport.Succeeded("GetItem") != 1 {
		t.Errorf("calls %v, %d succeeded; want 4 attempts, 1 answered", calls, b.Transport.Succeeded("GetItem"))
	}
	b.Transport.Reset()
	b.Transport.Throttle("GetItem", 3)
	if err := get(); !dynamodbstore.IsThrottle(err) {
		t.Fatalf("Throttle: %v, want a throttling error", err)
	}
}

// A commit DynamoDB refused (every attempt throttled) or that never left
// (the connection refused) stored nothing, and the 503 says so; one whose
// answers were lost says the change may have been stored.
func TestUnavailableSaysWhatMayHaveBeenStored(t *testing.T) {
	cases := []struct {
		name  string
		fault dynamotest.Fault
		// stored: the outcome is unknown (a server error's too: DynamoDB
		// may have applied the transaction before failing).
		stored bool
	}{
		{"throttled", dynamotest.Fault{Kind: dynamotest.ServiceError, Code: "ThrottlingException", Status: 400}, false},
		{"connection refused", dynamotest.Fault{Kind: dynamotest.Refused}, false},
		{"server error", dynamotest.Fault{Kind: dynamotest.ServiceError, Code: "InternalServerError", Status: 500}, true},
		{"answers lost", dynamotest.Fault{Kind: dynamotest.LostAnswer}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := dynamotest.Start(t)
			ledger, tasks := b.LedgerTable(t), b.CreateTable(t, tasksTable("tasks"), nil)
			id := uuid.NewString()
			putTask(t, b, tasks, id)
			tc.fault.Op, tc.fault.Times = "TransactWriteItems", 3
			b.Transport.Inject(tc.fault)
			got, _ := handler(b, ledger, tasks)(context.Background(), patch(id, uuid.NewString()))
			mayHave := strings.Contains(got.Body, "the change may have been stored")
			if got.StatusCode != 503 || mayHave == strings.Contains(got.Body, "nothing was stored") {
				t.Fatalf("%d %s", got.StatusCode, got.Body)
			}
			if mayHave != tc.stored {
				t.Errorf("%s: %s, want 'may have been stored' %v", tc.name, got.Body, tc.stored)
			}
		})
	}
}
