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
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// Without HTTP: an SQS batch through idempotency.Flow directly, one Do per
// message, keyed by an id the producer put in a message attribute (SQS's
// own MessageId is new on every send, so it cannot key a re-sent
// message). A message delivered twice, in one batch or another, writes
// once; a failed record goes in BatchItemFailures for SQS to redeliver.
// docs/exactly-once.md shows this code.
func TestFlowWithoutHTTPOnAnSQSBatch(t *testing.T) {
	b := start(t)
	flow := dynamodbstore.NewFlow(b.client, b.ledger, idempotency.Options{Cache: idempotency.NewReplayCache(1 << 20)})
	handle := func(ctx context.Context, batch events.SQSEvent) events.SQSEventResponse {
		var out events.SQSEventResponse
		for _, msg := range batch.Records {
			if err := importNote(ctx, flow, b.notesTable, msg); err != nil {
				out.BatchItemFailures = append(out.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
			}
		}
		return out
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

// importNote writes one message's note exactly once under its request id.
func importNote(ctx context.Context, flow *dynamodbstore.Flow, table string, msg events.SQSMessage) error {
	key := aws.ToString(msg.MessageAttributes["request-id"].StringValue)
	if key == "" {
		return fmt.Errorf("message without a request-id")
	}
	body, err := idempotency.Canonicalize([]byte(msg.Body))
	if err != nil {
		return err
	}
	var note struct{ ID, Title string }
	if err := json.Unmarshal(body, &note); err != nil {
		return err
	}
	req := idempotency.Request{UserID: "importer", Key: key, Method: "SQS", Route: "notes-import", CanonicalBody: body}
	res, err := flow.Do(ctx, req, func(context.Context, time.Time) (dynamodbstore.Execution, error) {
		return dynamodbstore.Execution{
			Response: idempotency.Response{StatusCode: 200, Body: []byte(`{}`)},
			Writes: []dynamodbstore.Write{{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{
				"user_id": &types.AttributeValueMemberS{Value: "importer"}, "id": &types.AttributeValueMemberS{Value: note.ID},
				"title": &types.AttributeValueMemberS{Value: note.Title}, "version": &types.AttributeValueMemberN{Value: "1"},
			}}}},
		}, nil
	})
	switch {
	case err != nil: // the store failed: let SQS redeliver
		return err
	case res.Outcome == idempotency.KeyReused: // the id was sent again with another body
		return fmt.Errorf("request id reused with another body")
	}
	return nil // Executed, or Replayed: already done
}
