package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/batch"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
)

// localTables starts an in-memory DynamoDB with the ledger table and a
// totals table, each customer's sum of payments. In AWS the client is
// dynamodb.NewFromConfig, and the tables are in the template.
func localTables(ctx context.Context) (*dynamodb.Client, func()) {
	srv := dynamotest.NewServer()
	client := dynamotest.NewClient(srv.URL, nil)
	totals := &dynamodb.CreateTableInput{
		TableName: aws.String("totals"), BillingMode: types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
	}
	for _, name := range []string{"ledger", "totals"} { // the embedded servers of one process share their tables
		_, _ = client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	}
	for _, err := range []error{
		dynamodbstore.CreateTable(ctx, client, dynamodbstore.TableInput("ledger"), dynamodbstore.TTLInput("ledger")),
		dynamodbstore.CreateTable(ctx, client, totals, nil),
	} {
		if err != nil {
			log.Fatal(err)
		}
	}
	return client, srv.Close
}

// pay adds amount to a customer's total: a write that must not run twice.
func pay(customer string, amount int) dynamodbstore.Execution {
	return dynamodbstore.Execution{Writes: []dynamodbstore.Write{{Update: &types.Update{
		TableName:                 aws.String("totals"),
		Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: customer}},
		UpdateExpression:          aws.String("ADD total :amount"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":amount": &types.AttributeValueMemberN{Value: fmt.Sprint(amount)}},
	}}}}
}

// payment is a message's body.
type payment struct {
	Customer string `json:"customer"`
	Amount   int    `json:"amount"`
}

// applyPayment is the handler of a payment's JSON: data is the message's
// body, or the stream record's data.
func applyPayment(data []byte) (dynamodbstore.Execution, error) {
	var p payment
	if err := json.Unmarshal(data, &p); err != nil || p.Customer == "" {
		return dynamodbstore.Execution{}, errors.New("not a payment")
	}
	return pay(p.Customer, p.Amount), nil
}

// printTotals prints each customer's total.
func printTotals(ctx context.Context, client *dynamodb.Client, customers ...string) {
	for _, c := range customers {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String("totals"), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: c}},
		})
		if err != nil {
			log.Fatal(err)
		}
		total := "0"
		if n, ok := out.Item["total"].(*types.AttributeValueMemberN); ok {
			total = n.Value
		}
		fmt.Println(c, total)
	}
}

// A standard queue's consumer: each message once under its MessageId, the
// one that fails answered in BatchItemFailures for SQS to deliver again.
// A message SQS delivers twice replays, from the replay cache here.
func ExampleSQS() {
	ctx := context.Background()
	client, stop := localTables(ctx)
	defer stop()
	flow := dynamodbstore.NewFlow(client, "ledger", idempotency.Options{Cache: idempotency.NewReplayCache(1 << 20)})
	handle := func(_ context.Context, m events.SQSMessage, _ time.Time) (dynamodbstore.Execution, error) {
		return applyPayment([]byte(m.Body))
	}
	// In a Lambda: lambda.Start(handler), with ReportBatchItemFailures on
	// the event source mapping.
	handler := func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
		resp, sum := batch.SQS(ctx, flow, e, handle, batch.Options[events.SQSMessage]{})
		fmt.Println(sum.Outcomes, "failed:", sum.Failed) // or slog.InfoContext(ctx, "batch", "summary", sum): counts only
		return resp, nil
	}

	first := events.SQSMessage{MessageId: "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31", Body: `{"customer":"c-1","amount":30}`}
	broken := events.SQSMessage{MessageId: "0b9a3c55-2d1e-4f6a-8b7c-9d0e1f2a3b4c", Body: `{"amount":`}
	other := events.SQSMessage{MessageId: "5c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5", Body: `{"customer":"c-2","amount":12}`}
	resp, _ := handler(ctx, events.SQSEvent{Records: []events.SQSMessage{first, broken, other}})
	fmt.Println(resp.BatchItemFailures)
	resp, _ = handler(ctx, events.SQSEvent{Records: []events.SQSMessage{first}}) // delivered again
	fmt.Println(resp.BatchItemFailures)
	printTotals(ctx, client, "c-1", "c-2")
	// Output:
	// map[executed:2] failed: 1
	// [{0b9a3c55-2d1e-4f6a-8b7c-9d0e1f2a3b4c}]
	// map[replayed:1] failed: 0
	// []
	// c-1 30
	// c-2 12
}

// A producer that retries SendMessage after a lost answer sends a second
// message with a new MessageId: keyed by a request id the producer puts in
// a message attribute, the two apply once. Each tenant's records are kept
// in a partition of the ledger of its own.
func ExampleOptions() {
	ctx := context.Background()
	client, stop := localTables(ctx)
	defer stop()
	flow := dynamodbstore.NewFlow(client, "ledger", idempotency.Options{})
	attribute := func(name string) func(events.SQSMessage) (string, error) {
		return func(m events.SQSMessage) (string, error) {
			if a, ok := m.MessageAttributes[name]; ok && a.StringValue != nil {
				return *a.StringValue, nil
			}
			return "", fmt.Errorf("no %s attribute", name)
		}
	}
	opts := batch.Options[events.SQSMessage]{Key: attribute("request-id"), Caller: attribute("tenant")}
	handle := func(_ context.Context, m events.SQSMessage, _ time.Time) (dynamodbstore.Execution, error) {
		return applyPayment([]byte(m.Body))
	}
	send := func(messageID string) events.SQSMessage {
		return events.SQSMessage{
			MessageId: messageID, Body: `{"customer":"c-1","amount":30}`,
			MessageAttributes: map[string]events.SQSMessageAttribute{
				"request-id": {DataType: "String", StringValue: aws.String("8e03978e-40d5-43e8-bc93-6894a57f9324")},
				"tenant":     {DataType: "String", StringValue: aws.String("acme")},
			},
		}
	}
	event := events.SQSEvent{Records: []events.SQSMessage{
		send("6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31"),
		send("d2b7e3a1-9c4f-4e8a-b1d6-3f5a7c9e2b40"), // the producer's retry
	}}
	resp, sum := batch.SQS(ctx, flow, event, handle, opts)
	fmt.Println(sum.Outcomes, resp.BatchItemFailures)
	printTotals(ctx, client, "c-1")
	// Output:
	// map[executed:1 replayed:1] []
	// c-1 30
}

// A Kinesis stream's consumer: records are in order, so the first that
// fails ends the batch, reported by sequence number with every later one;
// Lambda delivers the batch again from there.
func ExampleKinesis() {
	ctx := context.Background()
	client, stop := localTables(ctx)
	defer stop()
	flow := dynamodbstore.NewFlow(client, "ledger", idempotency.Options{})
	handle := func(_ context.Context, r events.KinesisEventRecord, _ time.Time) (dynamodbstore.Execution, error) {
		return applyPayment(r.Kinesis.Data)
	}
	var event events.KinesisEvent
	for i, data := range []string{`{"customer":"c-1","amount":30}`, `{"amount":`, `{"customer":"c-1","amount":5}`} {
		seq := fmt.Sprintf("4959037538846154937900000%d", i+1)
		event.Records = append(event.Records, events.KinesisEventRecord{
			EventID: "shardId-000000000000:" + seq,
			Kinesis: events.KinesisRecord{SequenceNumber: seq, Data: []byte(data)},
		})
	}
	resp, sum := batch.Kinesis(ctx, flow, event, handle, batch.Options[events.KinesisEventRecord]{})
	fmt.Println(sum.Outcomes, "skipped:", sum.Skipped)
	fmt.Println(resp.BatchItemFailures)
	printTotals(ctx, client, "c-1")
	// Output:
	// map[executed:1] skipped: 1
	// [{49590375388461549379000002} {49590375388461549379000003}]
	// c-1 30
}

// A DynamoDB stream's consumer that keeps a total of each customer's
// orders: each INSERT added once under its event id, however often Lambda
// delivers its batch.
func ExampleDynamoDB() {
	ctx := context.Background()
	client, stop := localTables(ctx)
	defer stop()
	flow := dynamodbstore.NewFlow(client, "ledger", idempotency.Options{})
	handle := func(_ context.Context, r events.DynamoDBEventRecord, _ time.Time) (dynamodbstore.Execution, error) {
		if r.EventName != "INSERT" {
			return dynamodbstore.Execution{}, nil // recorded, nothing written
		}
		customer, amount := r.Change.NewImage["customer"], r.Change.NewImage["amount"]
		if customer.DataType() != events.DataTypeString || amount.DataType() != events.DataTypeNumber {
			return dynamodbstore.Execution{}, errors.New("not an order") // the accessors would panic
		}
		n, err := amount.Int64()
		if err != nil {
			return dynamodbstore.Execution{}, err
		}
		return pay(customer.String(), int(n)), nil
	}
	order := func(eventID, seq, customer, amount string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: eventID, EventName: "INSERT", Change: events.DynamoDBStreamRecord{
			SequenceNumber: seq,
			NewImage: map[string]events.DynamoDBAttributeValue{
				"customer": events.NewStringAttribute(customer), "amount": events.NewNumberAttribute(amount),
			},
		}}
	}
	event := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		order("c0bd6f5a3e9b4b1e8a3c5d7e9f1a2b3c", "100", "c-1", "30"),
		order("1a2b3c4d5e6f47a8b9c0d1e2f3a4b5c6", "200", "c-2", "12"),
	}}
	for range 2 { // the second: Lambda delivering the batch again
		resp, sum := batch.DynamoDB(ctx, flow, event, handle, batch.Options[events.DynamoDBEventRecord]{})
		fmt.Println(sum.Outcomes, resp.BatchItemFailures)
	}
	printTotals(ctx, client, "c-1", "c-2")
	// Output:
	// map[executed:2] []
	// map[replayed:2] []
	// c-1 30
	// c-2 12
}
