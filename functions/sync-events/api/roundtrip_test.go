package api_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
)

// returnsItemOnCancel asks the backend whether a cancelled transaction
// carries the item that failed its condition (ReturnValuesOnConditionCheckFailure
// ALL_OLD). DynamoDB does; minidyn v0.8.2 does not.
func (hs *harness) returnsItemOnCancel() bool {
	hs.t.Helper()
	ctx := context.Background()
	item := map[string]types.AttributeValue{
		"user_id": &types.AttributeValueMemberS{Value: "probe"}, "key": &types.AttributeValueMemberS{Value: uuid.NewString()},
	}
	put := func() error {
		_, err := hs.b.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String(hs.b.Tables.Ledger), Item: item,
			ConditionExpression:                 aws.String("attribute_not_exists(user_id)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}}})
		return err
	}
	if err := put(); err != nil {
		hs.t.Fatal(err)
	}
	var cancelled *types.TransactionCanceledException
	if err := put(); !errors.As(err, &cancelled) || len(cancelled.CancellationReasons) != 1 {
		hs.t.Fatalf("second put: %v", err)
	}
	_, err := hs.b.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(hs.b.Tables.Ledger), Key: item})
	if err != nil {
		hs.t.Fatal(err)
	}
	return len(cancelled.CancellationReasons[0].Item) > 0
}

// TestDynamoDBCallsPerRequest counts the calls at the SDK's HTTP transport.
func TestDynamoDBCallsPerRequest(t *testing.T) {
	hs := newHarness(t)
	returnsItem := hs.returnsItemOnCancel()
	if hs.b.Name == "minidyn" && returnsItem {
		t.Fatal("minidyn now returns the item on a failed condition: update the README and the expected counts")
	}
	known := 2 // the cancelled transaction, then a strongly consistent GetItem
	if returnsItem {
		known = 1
	}
	t.Logf("backend %s returns the old item on a failed condition: %v", hs.b.Name, returnsItem)

	key, body := uuid.NewString(), eventBody(t, uuid.NewString())
	tests := []struct {
		name   string
		send   func() int
		status int
		calls  map[string]int
	}{
		{"fresh mutation", func() int { return hs.post("alice", key, body).StatusCode }, 201,
			map[string]int{"TransactWriteItems": 1}},
		{"replay", func() int { return hs.post("alice", key, body).StatusCode }, 201,
			map[string]int{"TransactWriteItems": 1, "GetItem": known - 1}},
		{"other body, 409", func() int { return hs.post("alice", key, eventBody(t, uuid.NewString())).StatusCode }, 409,
			map[string]int{"TransactWriteItems": 1, "GetItem": known - 1}},
		{"refused before execution", func() int { return hs.post("alice", "not-a-key", body).StatusCode }, 400,
			map[string]int{}},
		{"GET page", func() int { return hs.get("alice", nil).StatusCode }, 200,
			map[string]int{"Query": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs.b.Transport.Reset()
			if got := tt.send(); got != tt.status {
				t.Fatalf("status %d, want %d", got, tt.status)
			}
			got := hs.b.Transport.Calls()
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
