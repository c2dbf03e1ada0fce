package api_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/functions/sync-events/apitest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
)

// returnsItemOnCancel asks the backend whether a cancelled transaction
// carries the item that failed its condition (ReturnValuesOnConditionCheckFailure
// ALL_OLD). DynamoDB, moto and dynoxide do; kumo does not.
func returnsItemOnCancel(hs *apitest.Harness) bool {
	hs.T.Helper()
	ctx := context.Background()
	item := map[string]types.AttributeValue{
		"user_id": &types.AttributeValueMemberS{Value: "probe"}, "key": &types.AttributeValueMemberS{Value: uuid.NewString()},
	}
	put := func() error {
		_, err := hs.B.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(hs.B.Tables.Ledger), Item: item,
			ConditionExpression:                 aws.String("attribute_not_exists(user_id)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}}})
		return err
	}
	if err := put(); err != nil {
		hs.T.Fatal(err)
	}
	var cancelled *types.TransactionCanceledException
	if err := put(); !errors.As(err, &cancelled) || len(cancelled.CancellationReasons) != 1 {
		hs.T.Fatalf("second put: %v", err)
	}
	_, err := hs.B.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(hs.B.Tables.Ledger), Key: item})
	if err != nil {
		hs.T.Fatal(err)
	}
	return len(cancelled.CancellationReasons[0].Item) > 0
}

// TestDynamoDBCallsPerRequest counts the calls at the SDK's HTTP transport,
// in the environment that committed a key and in others that never saw it.
func TestDynamoDBCallsPerRequest(t *testing.T) {
	warm := apitest.New(t)
	returnsItem := returnsItemOnCancel(warm)
	known := 2 // the cancelled transaction, then a strongly consistent GetItem
	if returnsItem {
		known = 1
	}
	t.Logf("backend %s returns the old item on a failed condition: %v", warm.B.Name, returnsItem)
	cold, cold409 := warm.NewEnvironment(), warm.NewEnvironment()

	key, body := uuid.NewString(), apitest.EventBody(t, uuid.NewString())
	other := apitest.EventBody(t, uuid.NewString())
	tests := []struct {
		name   string
		hs     *apitest.Harness
		send   func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse
		status int
		calls  map[string]int
	}{
		{"fresh mutation", warm, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse { return hs.Post("alice", key, body) }, 201,
			map[string]int{"TransactWriteItems": 1}},
		{"replay from memory", warm, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse { return hs.Post("alice", key, body) }, 201,
			map[string]int{}},
		{"409 from memory", warm, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse { return hs.Post("alice", key, other) }, 409,
			map[string]int{}},
		{"replay in another environment", cold, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse { return hs.Post("alice", key, body) }, 201,
			map[string]int{"TransactWriteItems": 1, "GetItem": known - 1}},
		{"then from its memory", cold, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse { return hs.Post("alice", key, body) }, 201,
			map[string]int{}},
		{"409 in another environment", cold409, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse { return hs.Post("alice", key, other) }, 409,
			map[string]int{"TransactWriteItems": 1, "GetItem": known - 1}},
		{"then from its memory", cold409, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse { return hs.Post("alice", key, other) }, 409,
			map[string]int{}},
		{"refused before execution", warm, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse { return hs.Post("alice", "not-a-key", body) }, 400,
			map[string]int{}},
		// An invalid event is the API's own refusal: the key's record is
		// read first, as it would answer instead.
		{"refused by the API's checks", warm, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse {
			return hs.Post("alice", uuid.NewString(), `{"id":"not-a-uuid","type":"note.created","occurredAt":"2026-12-02T14:03:00Z","payload":{}}`)
		}, 400, map[string]int{"GetItem": 1}},
		// From the start, the stream's floor is read first (retention).
		{"GET page from the start", warm, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse { return hs.Get("alice", nil) }, 200,
			map[string]int{"GetItem": 1, "Query": 1}},
		{"GET page from a cursor", warm, func(hs *apitest.Harness) events.APIGatewayV2HTTPResponse {
			return hs.Get("alice", map[string]string{"cursor": "p0000000000000001"})
		}, 200, map[string]int{"Query": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warm.B.Transport.Reset()
			if got := tt.send(tt.hs).StatusCode; got != tt.status {
				t.Fatalf("status %d, want %d", got, tt.status)
			}
			got := warm.B.Transport.Calls()
			for op, n := range tt.calls {
				if got[op] != n {
					t.Errorf("%s calls: %d, want %d (all: %v)", op, got[op], n, got)
				}
				delete(got, op)
			}
			for op, n := range got {
				if n != 0 {
					t.Errorf("unexpected %d %s calls", n, op)
				}
			}
		})
	}
}
