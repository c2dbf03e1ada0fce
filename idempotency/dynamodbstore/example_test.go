package dynamodbstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sivchari/kumo"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// localClient is a DynamoDB client on kumo, an in-memory DynamoDB: in AWS
// it is dynamodb.NewFromConfig of config.LoadDefaultConfig.
func localClient(ctx context.Context) (*dynamodb.Client, func()) {
	srv := kumo.NewServer()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	if err != nil {
		log.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	return client, srv.Close
}

// A PATCH with a version check, exactly once: the UpdateItem and the key's
// record commit in one TransactWriteItems, or neither does.
func Example() {
	ctx := context.Background()
	client, stop := localClient(ctx)
	defer stop()

	// The ledger table (in AWS: the CloudFormation snippet), and a table of
	// the application's own.
	if err := dynamodbstore.CreateTable(ctx, client, dynamodbstore.TableInput("ledger"), dynamodbstore.TTLInput("ledger")); err != nil {
		log.Fatal(err)
	}
	notes := &dynamodb.CreateTableInput{
		TableName: aws.String("notes"), BillingMode: types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
	}
	if err := dynamodbstore.CreateTable(ctx, client, notes, nil); err != nil {
		log.Fatal(err)
	}
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("notes"), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: "n-1"}, "title": &types.AttributeValueMemberS{Value: "Groceries"},
		"version": &types.AttributeValueMemberN{Value: "1"},
	}})
	if err != nil {
		log.Fatal(err)
	}

	flow := idempotency.NewFlow(dynamodbstore.New(client, "ledger"), idempotency.Options{})
	rename := func(title string, version int) idempotency.Executor[types.TransactWriteItem] {
		return func(context.Context, time.Time) (idempotency.Execution[types.TransactWriteItem], error) {
			return idempotency.Execution[types.TransactWriteItem]{
				Response: idempotency.Response{StatusCode: 200, Body: fmt.Appendf(nil, `{"id":"n-1","title":%q,"version":%d}`, title, version+1)},
				Writes: []types.TransactWriteItem{{Update: &types.Update{
					TableName:           aws.String("notes"),
					Key:                 map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "n-1"}},
					UpdateExpression:    aws.String("SET title = :t, version = :next"),
					ConditionExpression: aws.String("version = :seen"),
					// Ask for the note as it stood if the version is stale:
					// the refusal then says whether it was found.
					ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
					ExpressionAttributeValues: map[string]types.AttributeValue{
						":t":    &types.AttributeValueMemberS{Value: title},
						":seen": &types.AttributeValueMemberN{Value: fmt.Sprint(version)},
						":next": &types.AttributeValueMemberN{Value: fmt.Sprint(version + 1)},
					},
				}}},
			}, nil
		}
	}
	patch := func(key, title string, version int) {
		body, _ := idempotency.Canonicalize(fmt.Appendf(nil, `{"title":%q,"version":%d}`, title, version))
		req := idempotency.Request{UserID: "alice", Key: key, Method: "PATCH", Route: "/notes/{id}", CanonicalBody: body}
		res, err := flow.Do(ctx, req, rename(title, version))
		switch {
		case err != nil: // a failure of DynamoDB's: retry with the same key
			log.Fatal(err)
		case res.Outcome == idempotency.WriteRejected: // nothing written or recorded
			fmt.Println(res.Outcome, "write", res.Refusals[0].Index, "found", res.Refusals[0].Found)
		default:
			fmt.Println(res.Outcome, res.StatusCode, string(res.Body))
		}
	}
	patch("8e03978e-40d5-43e8-bc93-6894a57f9324", "Errands", 1)
	patch("8e03978e-40d5-43e8-bc93-6894a57f9324", "Errands", 1) // a retry
	patch("0b9a3c55-2d1e-4f6a-8b7c-9d0e1f2a3b4c", "Chores", 1)  // stale: the note is at 2
	// Output:
	// executed 200 {"id":"n-1","title":"Errands","version":2}
	// replayed 200 {"id":"n-1","title":"Errands","version":2}
	// write_rejected write 0 found true
}
