package dynamodbstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

// localTables starts an in-memory DynamoDB with the ledger table and a
// notes table holding note n-1 at version 1. In AWS the client is
// dynamodb.NewFromConfig, and the tables are in the template.
func localTables(ctx context.Context) (*dynamodb.Client, func()) {
	srv := dynamotest.NewServer()
	client := dynamotest.NewClient(srv.URL, nil)
	notes := &dynamodb.CreateTableInput{
		TableName: aws.String("notes"), BillingMode: types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
	}
	for _, err := range []error{
		dynamodbstore.CreateTable(ctx, client, dynamodbstore.TableInput("ledger"), dynamodbstore.TTLInput("ledger")),
		dynamodbstore.CreateTable(ctx, client, notes, nil),
	} {
		if err != nil {
			log.Fatal(err)
		}
	}
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("notes"), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: "n-1"}, "title": &types.AttributeValueMemberS{Value: "Groceries"},
		"version": &types.AttributeValueMemberN{Value: "1"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	return client, srv.Close
}

// rename is the UpdateItem of a note's title, conditioned on the version
// the client read. ALL_OLD asks for the note as it stood if the condition
// fails, so that the refusal says whether it was there.
func rename(id, title string, seen int) dynamodbstore.Write {
	return dynamodbstore.Write{Update: &types.Update{
		TableName:           aws.String("notes"),
		Key:                 map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:    aws.String("SET title = :t, version = :next"),
		ConditionExpression: aws.String("version = :seen"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t":    &types.AttributeValueMemberS{Value: title},
			":seen": &types.AttributeValueMemberN{Value: fmt.Sprint(seen)},
			":next": &types.AttributeValueMemberN{Value: fmt.Sprint(seen + 1)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// The application's own codes and refusals.
const (
	NoteNotFound        errcode.Code = "NOTE_NOT_FOUND"
	NoteVersionConflict errcode.Code = "NOTE_VERSION_CONFLICT"
)

var (
	errNotFound = errcode.New(NoteNotFound, "No note has that id; nothing was stored")
	errStale    = errcode.New(NoteVersionConflict, "The note has changed since that version; nothing was stored")
)

// A PATCH route on API Gateway: the update and the key's record commit in
// one TransactWriteItems; a failed condition is the 404 or the 409 the
// mutation words from the refusal, with nothing recorded.
func ExamplePlan() {
	ctx := context.Background()
	client, stop := localTables(ctx)
	defer stop()

	patch := func(_ context.Context, r *mutation.Request) (dynamodbstore.Plan, error) {
		var in struct {
			Title   string `json:"title"`
			Version int    `json:"version"`
		}
		if err := json.Unmarshal(r.Body, &in); err != nil || in.Version < 1 {
			return dynamodbstore.Plan{}, errcode.Invalid("title and version are required", errcode.Field{Field: "body"})
		}
		id := r.PathParams["id"]
		return dynamodbstore.Plan{
			Body:   map[string]any{"id": id, "title": in.Title, "version": in.Version + 1},
			Writes: []dynamodbstore.Write{rename(id, in.Title, in.Version)},
			Refused: func(_ context.Context, refused []idempotency.Refusal) error {
				if refused[0].Found {
					return errStale // the note stood, at another version
				}
				return errNotFound
			},
		}, nil
	}
	runner := dynamodbstore.NewRunner(client, "ledger", idempotency.Options{}, mutation.Options{
		Statuses: map[errcode.Code]int{NoteNotFound: http.StatusNotFound, NoteVersionConflict: http.StatusConflict},
	})
	handler := runner.HTTPAPI(patch, nil) // in a Lambda: lambda.Start(handler)

	send := func(id, key, body string) {
		req := events.APIGatewayV2HTTPRequest{
			RouteKey:       "PATCH /notes/{id}",
			PathParameters: map[string]string{"id": id},
			Headers:        map[string]string{"content-type": "application/json", "idempotency-key": key},
			Body:           body,
		}
		req.RequestContext.HTTP.Method = "PATCH"
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}},
		}
		resp, _ := handler(ctx, req)
		fmt.Println(resp.StatusCode, resp.Body)
	}
	send("n-1", "8e03978e-40d5-43e8-bc93-6894a57f9324", `{"title":"Errands","version":1}`)
	send("n-1", "8e03978e-40d5-43e8-bc93-6894a57f9324", `{"title":"Errands","version":1}`) // a retry
	send("n-1", "0b9a3c55-2d1e-4f6a-8b7c-9d0e1f2a3b4c", `{"title":"Chores","version":1}`)  // stale
	send("n-2", "5c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5", `{"title":"Chores","version":1}`)  // no such note
	// Output:
	// 200 {"id":"n-1","title":"Errands","version":2}
	// 200 {"id":"n-1","title":"Errands","version":2}
	// 409 {"error":"NOTE_VERSION_CONFLICT","message":"The note has changed since that version; nothing was stored"}
	// 404 {"error":"NOTE_NOT_FOUND","message":"No note has that id; nothing was stored"}
}

// The flow without HTTP (a schedule's run, say; a queue's or a stream's
// batch has package batch): an Executor plans the answer and the writes,
// given the commit's time, and Do commits them once per key.
func ExampleFlow() {
	ctx := context.Background()
	client, stop := localTables(ctx)
	defer stop()
	flow := dynamodbstore.NewFlow(client, "ledger", idempotency.Options{})

	do := func(key, title string) {
		body, _ := idempotency.Canonicalize(fmt.Appendf(nil, `{"title":%q}`, title))
		req := idempotency.Request{UserID: "importer", Key: key, Method: "SQS", Route: "notes-rename", CanonicalBody: body}
		res, err := flow.Do(ctx, req, func(context.Context, time.Time) (dynamodbstore.Execution, error) {
			return dynamodbstore.Execution{
				Response: idempotency.Response{StatusCode: 200, Body: []byte(`{}`)},
				Writes:   []dynamodbstore.Write{rename("n-1", title, 1)},
			}, nil
		})
		switch {
		case err != nil: // a failure of DynamoDB's: let the queue redeliver
			log.Fatal(err)
		case res.Outcome == idempotency.WriteRejected: // nothing written or recorded
			fmt.Println(res.Outcome, "write", res.Refusals[0].Index, "found", res.Refusals[0].Found)
		default:
			fmt.Println(res.Outcome)
		}
	}
	do("8e03978e-40d5-43e8-bc93-6894a57f9324", "Errands")
	do("8e03978e-40d5-43e8-bc93-6894a57f9324", "Errands") // redelivered
	do("0b9a3c55-2d1e-4f6a-8b7c-9d0e1f2a3b4c", "Chores")  // stale: the note is at 2
	// Output:
	// executed
	// replayed
	// write_rejected write 0 found true
}
