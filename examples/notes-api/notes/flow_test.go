package notes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/batch"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// Without HTTP: an SQS batch through package batch, each message once
// under the id its producer put in a message attribute (SQS's own
// MessageId is new on every send, so it cannot key a re-sent message). A
// message delivered twice, in one batch or another, writes once; a failed
// record goes in BatchItemFailures for SQS to redeliver.
// docs/exactly-once.md shows this code.
func TestFlowWithoutHTTPOnAnSQSBatch(t *testing.T) {
	b := start(t)
	flow := dynamodbstore.NewFlow(b.client, b.ledger, idempotency.Options{Cache: idempotency.NewReplayCache(1 << 20)})
	handle := func(ctx context.Context, event events.SQSEvent) events.SQSEventResponse {
		resp, _ := batch.SQS(ctx, flow, event, importNote(b.notesTable), byRequestID)
		return resp
	}
	message := func(requestID, noteID string) events.SQSMessage {
		return events.SQSMessage{
			MessageId: uuid.NewString(), Body: fmt.Sprintf(`{"id":%q,"title":"Imported"}`, noteID),
			MessageAttributes: map[string]events.SQSMessageAttribute{"request-id": {StringValue: aws.String(requestID), DataType: "String"}},
		}
	}
	first := message("req-1", "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31")
	again := message("req-1", "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31")
	noKey := message("", "0b9a3c55-2d1e-4f6a-8b7c-9d0e1f2a3b4c")

	b.calls.reset()
	resp := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{first, again, noKey}})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != noKey.MessageId {
		t.Fatalf("failures %+v, want only the message without a key", resp.BatchItemFailures)
	}
	if calls, _ := b.calls.snapshot(); calls["TransactWriteItems"] != 1 {
		t.Errorf("calls %v, want one TransactWriteItems: the duplicate answered from the cache", calls)
	}
	handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{again}}) // redelivered later
	if got := b.storedNote(t, "importer", "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31"); got["version"] != "1" {
		t.Errorf("imported note %v", got)
	}
	if recs := b.records(t); len(recs) != 1 {
		t.Errorf("%d ledger records, want 1", len(recs))
	}
}

// byRequestID keys each message by the id its producer put in the
// request-id attribute: a producer's retried send is another message with
// the same request id.
var byRequestID = batch.Options[events.SQSMessage]{
	Key: func(msg events.SQSMessage) (string, error) {
		key := aws.ToString(msg.MessageAttributes["request-id"].StringValue)
		if key == "" {
			return "", fmt.Errorf("message without a request-id")
		}
		return key, nil
	},
}

// importNote writes one message's note; batch.SQS commits it with the
// message's key, once.
func importNote(table string) batch.Handler[events.SQSMessage, dynamodbstore.Write] {
	return func(_ context.Context, msg events.SQSMessage, _ time.Time) (dynamodbstore.Execution, error) {
		var note struct{ ID, Title string }
		if err := json.Unmarshal([]byte(msg.Body), &note); err != nil {
			return dynamodbstore.Execution{}, err // reported failed, and redelivered
		}
		return dynamodbstore.Execution{
			Writes: []dynamodbstore.Write{{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{
				"user_id": &types.AttributeValueMemberS{Value: "importer"}, "id": &types.AttributeValueMemberS{Value: note.ID},
				"title": &types.AttributeValueMemberS{Value: note.Title}, "version": &types.AttributeValueMemberN{Value: "1"},
			}}}},
		}, nil
	}
}
