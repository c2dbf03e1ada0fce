package ddb

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/idempotency"
)

func cancelled(reasons ...types.CancellationReason) error {
	return &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: reasons}
}

func reason(code string) types.CancellationReason {
	return types.CancellationReason{Code: aws.String(code)}
}

// TestClassifyCommitError covers the cancellation reasons as DynamoDB sends
// them, including the old item that kumo never returns.
func TestClassifyCommitError(t *testing.T) {
	rec := idempotency.Record{
		UserID: "u", Key: "k", PayloadHash: "h", StatusCode: 201, ResponseBody: []byte(`{"id":"x"}`),
		Method: "POST", Route: "/r", CreatedAt: time.Date(2026, 12, 2, 14, 3, 0, 250e6, time.UTC),
		ExpiresAt: time.Date(2026, 12, 9, 14, 3, 0, 0, time.UTC),
	}
	withItem := reason("ConditionalCheckFailed")
	withItem.Item = recordItem(rec)

	err := classifyCommitError(cancelled(withItem, reason("None")))
	var exists *idempotency.KeyExistsError
	if !errors.As(err, &exists) || exists.Existing == nil || !reflect.DeepEqual(*exists.Existing, rec) {
		t.Fatalf("with the old item: %v %+v", err, exists)
	}
	if err := classifyCommitError(cancelled(reason("ConditionalCheckFailed"), reason("None"))); !errors.As(err, &exists) || exists.Existing != nil {
		t.Fatalf("without the old item: %v", err)
	}
	var write *writesFailed
	if err := classifyCommitError(cancelled(reason("None"), reason("None"), reason("ConditionalCheckFailed"))); !errors.As(err, &write) || !slices.Equal(write.indexes, []int{1}) {
		t.Fatalf("business condition: %v", err)
	}
	if err := classifyCommitError(cancelled(reason("None"), reason("TransactionConflict"))); !errors.Is(err, idempotency.ErrTransactionConflict) {
		t.Fatalf("conflict: %v", err)
	}
	if err := classifyCommitError(cancelled(reason("ThrottlingError"), reason("None"))); !errors.Is(err, ErrThrottled) || !IsTransient(err) {
		t.Fatalf("throttled: %v", err)
	}
	broken := reason("ConditionalCheckFailed")
	broken.Item = map[string]types.AttributeValue{"user_id": str("u")}
	if err := classifyCommitError(cancelled(broken)); !errors.As(err, &exists) || exists.Existing != nil {
		t.Fatalf("a malformed old item must be read again, not trusted: %v", err)
	}
}

func TestItemSizeCountsNamesAndValues(t *testing.T) {
	item := map[string]types.AttributeValue{
		"ab": str("xyz"),                                                                          // 2 + 3
		"n":  &types.AttributeValueMemberN{Value: "12345"},                                        // 1 + 5
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": str("v")}}, // 1 + 3 + 2 + 1
	}
	if got := ItemSize(item); got != 18 {
		t.Fatalf("ItemSize = %d, want 18", got)
	}
	big := map[string]types.AttributeValue{"b": str(strings.Repeat("x", MaxItemBytes))}
	err := checkTransactionLimits([]types.TransactWriteItem{{Put: &types.Put{Item: big}}})
	if !errors.Is(err, idempotency.ErrTooLarge) {
		t.Fatalf("an item over 400 KB: %v", err)
	}
}
