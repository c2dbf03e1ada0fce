package batch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
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

// env is a consumer's world on a real backend: the ledger, and a table of
// counters that each committed record adds 1 to, so that a second commit
// of one record shows.
type env struct {
	b      *dynamotest.Backend
	ledger string
	counts string

	mu   sync.Mutex
	runs map[string]int // handler runs by counter id
	fail map[string]bool
}

var countsTable = &dynamodb.CreateTableInput{
	TableName: aws.String("counts"), BillingMode: types.BillingModePayPerRequest,
	KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
}

func setup(t *testing.T) *env {
	t.Helper()
	b := dynamotest.Start(t)
	return &env{b: b, ledger: b.LedgerTable(t), counts: b.CreateTable(t, countsTable, nil), runs: map[string]int{}, fail: map[string]bool{}}
}

// flow is a fresh execution environment's flow: no replay cache unless
// asked, so a replay is the ledger's.
func (e *env) flow(cache bool) *dynamodbstore.Flow {
	opts := idempotency.Options{}
	if cache {
		opts.Cache = idempotency.NewReplayCache(1 << 20)
	}
	return dynamodbstore.NewFlow(e.b.Client, e.ledger, opts)
}

// bump is the mutation of counter id: ADD n 1. It fails while fail[id].
func (e *env) bump(id string) (dynamodbstore.Execution, error) {
	e.mu.Lock()
	e.runs[id]++
	failing := e.fail[id]
	e.mu.Unlock()
	if failing {
		return dynamodbstore.Execution{}, fmt.Errorf("counter %s refused", id)
	}
	return dynamodbstore.Execution{Writes: []dynamodbstore.Write{{Update: &types.Update{
		TableName:                 aws.String(e.counts),
		Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}}}}, nil
}

func (e *env) setFail(id string, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fail[id] = on
}

func (e *env) ran(id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[id]
}

// sqsHandler bumps the counter the message's body names.
func (e *env) sqsHandler(_ context.Context, m events.SQSMessage, _ time.Time) (dynamodbstore.Execution, error) {
	return e.bump(m.Body)
}

// count is counter id's value: how many commits added to it.
func (e *env) count(t *testing.T, id string) int {
	t.Helper()
	out, err := e.b.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.counts), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := out.Item["n"].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantCounts holds each counter to its value.
func (e *env) wantCounts(t *testing.T, want map[string]int) {
	t.Helper()
	for id, n := range want {
		if got := e.count(t, id); got != n {
			t.Errorf("counter %s is %d, want %d", id, got, n)
		}
	}
}

// ledgerRecords is the number of records in the ledger.
func (e *env) ledgerRecords(t *testing.T) int {
	t.Helper()
	out, err := e.b.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.ledger), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}

const standardQueue = "arn:aws:sqs:eu-west-1:123456789012:orders"

// messages are SQS messages whose bodies name counters, one message id each.
func messages(arn string, bodies ...string) events.SQSEvent {
	var e events.SQSEvent
	for i, body := range bodies {
		e.Records = append(e.Records, events.SQSMessage{
			MessageId: fmt.Sprintf("9d1c7a52-0000-4000-8000-%012d", i+1), Body: body, EventSourceARN: arn,
		})
	}
	return e
}

func sqsIDs(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func wantOutcomes(t *testing.T, sum batch.Summary, want map[idempotency.Outcome]int) {
	t.Helper()
	for _, o := range idempotency.Outcomes {
		if sum.Outcomes[o] != want[o] {
			t.Errorf("outcomes %v, want %v", sum.Outcomes, want)
			return
		}
	}
}

// A batch whose third message fails reports exactly that one; the others
// commit once. Delivered again (a fresh environment: no cache), the four
// replay from the ledger with no second write, and the third, its cause
// gone, commits.
func TestSQSReportsTheFailedMessageAndCommitsTheOthersOnce(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	event := messages(standardQueue, "a", "b", "c", "d", "e")
	e.setFail("c", true)

	resp, sum := batch.SQS(ctx, e.flow(false), event, e.sqsHandler, batch.Options[events.SQSMessage]{})
	if got, want := sqsIDs(resp), []string{event.Records[2].MessageId}; !slices.Equal(got, want) {
		t.Fatalf("failures %v, want %v", got, want)
	}
	wantOutcomes(t, sum, map[idempotency.Outcome]int{idempotency.Executed: 4})
	if sum.Records != 5 || sum.Errors != 1 || sum.Failed != 1 || sum.Skipped != 0 || len(sum.Failures) != 1 {
		t.Errorf("summary %+v", sum)
	}
	if f := sum.Failures[0]; f.Index != 2 || f.ItemIdentifier != event.Records[2].MessageId || !strings.Contains(f.Err.Error(), "counter c refused") {
		t.Errorf("failure %+v", f)
	}
	e.wantCounts(t, map[string]int{"a": 1, "b": 1, "c": 0, "d": 1, "e": 1})

	e.setFail("c", false)
	e.b.Transport.Reset()
	resp, sum = batch.SQS(ctx, e.flow(false), event, e.sqsHandler, batch.Options[events.SQSMessage]{})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v on redelivery", sqsIDs(resp))
	}
	wantOutcomes(t, sum, map[idempotency.Outcome]int{idempotency.Replayed: 4, idempotency.Executed: 1})
	e.wantCounts(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1})
	if n := e.ledgerRecords(t); n != 5 {
		t.Errorf("%d ledger records, want 5", n)
	}
	if ok := e.b.Transport.Succeeded("TransactWriteItems"); ok != 1 {
		t.Errorf("%d transactions applied on redelivery, want 1: the replays commit nothing", ok)
	}
}

// SQS delivers a message twice, in one batch: the same message id. It
// commits once; with the environment's replay cache the second costs no
// call and runs no handler.
func TestSQSDuplicateWithinABatchCommitsOnce(t *testing.T) {
	ctx := context.Background()
	for _, cache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			e := setup(t)
			event := messages(standardQueue, "a", "b")
			event.Records = append(event.Records, event.Records[0])

			resp, sum := batch.SQS(ctx, e.flow(cache), event, e.sqsHandler, batch.Options[events.SQSMessage]{})
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures %v", sqsIDs(resp))
			}
			wantOutcomes(t, sum, map[idempotency.Outcome]int{idempotency.Executed: 2, idempotency.Replayed: 1})
			e.wantCounts(t, map[string]int{"a": 1, "b": 1})
			if ok := e.b.Transport.Succeeded("TransactWriteItems"); ok != 2 {
				t.Errorf("%d transactions applied, want 2", ok)
			}
			if cache && (e.ran("a") != 1 || sum.FromCache != 1) {
				t.Errorf("handler ran %d times for a, %d from the cache; want 1 and 1", e.ran("a"), sum.FromCache)
			}
		})
	}
}

// A producer's retried send is a new message with a new id: keyed by an id
// the producer put in an attribute, the two run once; a per-record caller
// keeps two tenants' equal ids apart. A message without the attribute
// fails, its handler not run.
func TestSQSKeyAndCallerFromTheMessage(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	attr := func(m events.SQSMessage, name string) (string, error) {
		a, ok := m.MessageAttributes[name]
		if !ok {
			return "", fmt.Errorf("no %s attribute", name)
		}
		return aws.ToString(a.StringValue), nil
	}
	opts := batch.Options[events.SQSMessage]{
		Key:    func(m events.SQSMessage) (string, error) { return attr(m, "request-id") },
		Caller: func(m events.SQSMessage) (string, error) { return attr(m, "tenant") },
	}
	event := messages(standardQueue, "a", "a", "b", "c")
	set := func(i int, tenant, requestID string) {
		event.Records[i].MessageAttributes = map[string]events.SQSMessageAttribute{
			"tenant": {DataType: "String", StringValue: aws.String(tenant)},
		}
		if requestID != "" {
			event.Records[i].MessageAttributes["request-id"] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(requestID)}
		}
	}
	set(0, "t-1", "r-1")
	set(1, "t-1", "r-1") // the producer's retry: another message id
	set(2, "t-2", "r-1") // another tenant's r-1
	set(3, "t-1", "")

	resp, sum := batch.SQS(ctx, e.flow(false), event, e.sqsHandler, opts)
	if got, want := sqsIDs(resp), []string{event.Records[3].MessageId}; !slices.Equal(got, want) {
		t.Fatalf("failures %v, want %v", got, want)
	}
	wantOutcomes(t, sum, map[idempotency.Outcome]int{idempotency.Executed: 2, idempotency.Replayed: 1})
	e.wantCounts(t, map[string]int{"a": 1, "b": 1, "c": 0})
	if e.ran("c") != 0 || sum.Errors != 1 {
		t.Errorf("handler ran %d times without a key, errors %d", e.ran("c"), sum.Errors)
	}
}

// The commit of the second message is applied and its answer lost on
// every SDK attempt: the message is reported failed, and, delivered again
// to a fresh environment, replays from its record: written once. Its
// handler now fails (what it read is gone, say), and the stored answer
// wins: the record is done, not failed.
func TestSQSLostAnswerIsReportedThenReplayed(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	event := messages(standardQueue, "a", "b", "c")
	e.b.Transport.Inject(dynamotest.Fault{Op: "TransactWriteItems", Kind: dynamotest.LostAnswer, After: 1, Times: 3})

	resp, sum := batch.SQS(ctx, e.flow(false), event, e.sqsHandler, batch.Options[events.SQSMessage]{})
	if got, want := sqsIDs(resp), []string{event.Records[1].MessageId}; !slices.Equal(got, want) {
		t.Fatalf("failures %v, want %v", got, want)
	}
	if len(sum.Failures) != 1 || !errors.Is(sum.Failures[0].Err, idempotency.ErrOutcomeUnknown) {
		t.Errorf("failures %+v, want the outcome unknown", sum.Failures)
	}
	e.b.Transport.Reset()
	e.setFail("b", true)
	resp, sum = batch.SQS(ctx, e.flow(false), events.SQSEvent{Records: event.Records[1:2]}, e.sqsHandler, batch.Options[events.SQSMessage]{})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v on redelivery", sqsIDs(resp))
	}
	wantOutcomes(t, sum, map[idempotency.Outcome]int{idempotency.Replayed: 1})
	if n := e.ran("b"); n != 2 {
		t.Errorf("b's handler ran %d times, want 2: its refusal on redelivery overruled by the record", n)
	}
	e.wantCounts(t, map[string]int{"a": 1, "b": 1, "c": 1})
}

// On a FIFO queue the first failure ends the batch: it and every later
// message are reported, none of them tried. AnyOrder tries them all; and
// InOrder holds a standard queue to its order too.
func TestOrderStopsAtTheFirstFailure(t *testing.T) {
	ctx := context.Background()
	fifo := "arn:aws:sqs:eu-west-1:123456789012:orders.fifo"
	for _, tc := range []struct {
		name   string
		arn    string
		order  batch.Order
		failed []int
	}{
		{"fifo", fifo, batch.OrderBySource, []int{1, 2, 3}},
		{"fifo any order", fifo, batch.AnyOrder, []int{1}},
		{"standard", standardQueue, batch.OrderBySource, []int{1}},
		{"standard in order", standardQueue, batch.InOrder, []int{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			event := messages(tc.arn, "a", "b", "c", "d")
			e.setFail("b", true)
			resp, sum := batch.SQS(ctx, e.flow(false), event, e.sqsHandler, batch.Options[events.SQSMessage]{Order: tc.order})
			var want []string
			for _, i := range tc.failed {
				want = append(want, event.Records[i].MessageId)
			}
			if got := sqsIDs(resp); !slices.Equal(got, want) {
				t.Fatalf("failures %v, want %v", got, want)
			}
			skipped := len(tc.failed) - 1
			if sum.Skipped != skipped || sum.Failed != len(tc.failed) || len(sum.Failures) != 1 {
				t.Errorf("summary %+v, want %d skipped", sum, skipped)
			}
			tried := 1 - min(skipped, 1)
			if e.ran("c") != tried || e.ran("d") != tried {
				t.Errorf("handler ran %d and %d times after the failure, want %d", e.ran("c"), e.ran("d"), tried)
			}
			e.wantCounts(t, map[string]int{"a": 1, "b": 0, "c": tried, "d": tried})
		})
	}
}

// A Kinesis batch stops at its failed record by default, reported by
// sequence number with every later one; delivered again from there (as
// Lambda does), the rest commit, and a record seen again replays.
func TestKinesisStopsAtTheFailureAndResumes(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	var event events.KinesisEvent
	for i, data := range []string{"a", "b", "c"} {
		seq := fmt.Sprintf("4959037538846154937900%02d", i+1)
		event.Records = append(event.Records, events.KinesisEventRecord{
			EventID:        "shardId-000000000000:" + seq,
			EventSourceArn: "arn:aws:kinesis:eu-west-1:123456789012:stream/orders",
			Kinesis:        events.KinesisRecord{Data: []byte(data), SequenceNumber: seq, PartitionKey: "p"},
		})
	}
	handle := func(_ context.Context, r events.KinesisEventRecord, _ time.Time) (dynamodbstore.Execution, error) {
		return e.bump(string(r.Kinesis.Data))
	}
	e.setFail("b", true)
	resp, sum := batch.Kinesis(ctx, e.flow(false), event, handle, batch.Options[events.KinesisEventRecord]{})
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if want := []string{event.Records[1].Kinesis.SequenceNumber, event.Records[2].Kinesis.SequenceNumber}; !slices.Equal(got, want) {
		t.Fatalf("failures %v, want %v", got, want)
	}
	if sum.Skipped != 1 || e.ran("c") != 0 {
		t.Errorf("skipped %d, c ran %d times; want 1 and 0", sum.Skipped, e.ran("c"))
	}
	e.setFail("b", false)
	resp, sum = batch.Kinesis(ctx, e.flow(false), event, handle, batch.Options[events.KinesisEventRecord]{})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v on redelivery", resp.BatchItemFailures)
	}
	wantOutcomes(t, sum, map[idempotency.Outcome]int{idempotency.Replayed: 1, idempotency.Executed: 2})
	e.wantCounts(t, map[string]int{"a": 1, "b": 1, "c": 1})
}

// A DynamoDB stream's records keyed by an id in the item: a second change
// under the same id with another image is KeyReused, a failure, and the
// batch stops there; a redelivered record replays.
func TestDynamoDBStreamKeyReusedIsAFailure(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	change := func(seq, orderID, counter string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{
			EventID: "evt-" + seq, EventName: "INSERT", EventSource: "aws:dynamodb",
			EventSourceArn: "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000",
			Change: events.DynamoDBStreamRecord{
				SequenceNumber: seq,
				Keys:           map[string]events.DynamoDBAttributeValue{"id": events.NewStringAttribute(orderID)},
				NewImage: map[string]events.DynamoDBAttributeValue{
					"id": events.NewStringAttribute(orderID), "counter": events.NewStringAttribute(counter),
				},
			},
		}
	}
	event := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		change("100", "o-1", "a"),
		change("200", "o-1", "b"), // o-1 again, another image
		change("300", "o-2", "c"),
	}}
	handle := func(_ context.Context, r events.DynamoDBEventRecord, _ time.Time) (dynamodbstore.Execution, error) {
		return e.bump(r.Change.NewImage["counter"].String())
	}
	opts := batch.Options[events.DynamoDBEventRecord]{
		Key: func(r events.DynamoDBEventRecord) (string, error) {
			return "order#" + r.Change.Keys["id"].String(), nil
		},
	}
	resp, sum := batch.DynamoDB(ctx, e.flow(false), event, handle, opts)
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if want := []string{"200", "300"}; !slices.Equal(got, want) {
		t.Fatalf("failures %v, want %v", got, want)
	}
	wantOutcomes(t, sum, map[idempotency.Outcome]int{idempotency.Executed: 1, idempotency.KeyReused: 1})
	if len(sum.Failures) != 1 || sum.Failures[0].Outcome != idempotency.KeyReused {
		t.Errorf("failures %+v", sum.Failures)
	}

	resp, sum = batch.DynamoDB(ctx, e.flow(false), events.DynamoDBEvent{Records: event.Records[:1]}, handle, opts)
	if len(resp.BatchItemFailures) != 0 || sum.Outcomes[idempotency.Replayed] != 1 {
		t.Errorf("redelivery: failures %v, outcomes %v", resp.BatchItemFailures, sum.Outcomes)
	}
	e.wantCounts(t, map[string]int{"a": 1, "b": 0, "c": 0})
}

// A failed write condition records nothing and reports the record, with
// the refused write.
func TestWriteRejectedIsAFailure(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	handle := func(_ context.Context, m events.SQSMessage, _ time.Time) (dynamodbstore.Execution, error) {
		return dynamodbstore.Execution{Writes: []dynamodbstore.Write{{ConditionCheck: &types.ConditionCheck{
			TableName:           aws.String(e.counts),
			Key:                 map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: m.Body}},
			ConditionExpression: aws.String("attribute_exists(id)"),
		}}}}, nil
	}
	event := messages(standardQueue, "missing")
	resp, sum := batch.SQS(ctx, e.flow(false), event, handle, batch.Options[events.SQSMessage]{})
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %v", sqsIDs(resp))
	}
	var refused *idempotency.WriteConditionError
	if f := sum.Failures[0]; f.Outcome != idempotency.WriteRejected || !errors.As(f.Err, &refused) || !slices.Equal(refused.Indexes(), []int{0}) {
		t.Errorf("failure %+v", f)
	}
	if n := e.ledgerRecords(t); n != 0 {
		t.Errorf("%d ledger records, want none", n)
	}
}

// The summary logs its counts and nothing of a record: no body, no key.
func TestSummaryLogsCountsOnly(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	event := messages(standardQueue, "secret-body", "other")
	e.setFail("other", true)
	_, sum := batch.SQS(ctx, e.flow(false), event, e.sqsHandler, batch.Options[events.SQSMessage]{})
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("batch", "summary", sum)
	line := buf.String()
	for _, want := range []string{"summary.records=2", "summary.executed=1", "summary.errors=1", "summary.failed=1"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}
	for _, secret := range []string{"secret-body", "other", event.Records[1].MessageId, "9d1c7a52"} {
		if strings.Contains(line, secret) {
			t.Errorf("log line %q holds %q", line, secret)
		}
	}
}
