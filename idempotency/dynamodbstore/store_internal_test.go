package dynamodbstore

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
)

func cancelled(reasons ...types.CancellationReason) error {
	return &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: reasons}
}

func reason(code string) types.CancellationReason {
	return types.CancellationReason{Code: aws.String(code)}
}

// TestClassifyCommit covers the cancellation reasons as DynamoDB sends
// them, including the old item that kumo never returns.
func TestClassifyCommit(t *testing.T) {
	rec := idempotency.Record{
		UserID: "u", Key: "k", PayloadHash: "h", StatusCode: 201, ResponseBody: []byte(`{"id":"x"}`),
		Method: "POST", Route: "/r", CreatedAt: time.Date(2026, 12, 2, 14, 3, 0, 250e6, time.UTC),
		ExpiresAt: time.Date(2026, 12, 9, 14, 3, 0, 0, time.UTC),
	}
	withItem := reason("ConditionalCheckFailed")
	withItem.Item = encodeRecord(rec)

	err := classifyCommit(cancelled(withItem, reason("None")))
	var exists *idempotency.KeyExistsError
	if !errors.As(err, &exists) || exists.Existing == nil || !reflect.DeepEqual(*exists.Existing, rec) {
		t.Fatalf("with the old item: %v %+v", err, exists)
	}
	if err := classifyCommit(cancelled(reason("ConditionalCheckFailed"), reason("None"))); !errors.As(err, &exists) || exists.Existing != nil {
		t.Fatalf("without the old item: %v", err)
	}
	oldItem := reason("ConditionalCheckFailed")
	oldItem.Item = map[string]types.AttributeValue{"seq": &types.AttributeValueMemberN{Value: "7"}}
	err = classifyCommit(cancelled(reason("None"), reason("None"), oldItem))
	var failed *ConditionFailedError
	var generic *idempotency.WriteConditionError
	if !errors.As(err, &failed) || !slices.Equal(failed.Indexes, []int{1}) || failed.Items[0]["seq"] == nil {
		t.Fatalf("business condition: %v", err)
	}
	if !errors.As(err, &generic) || !slices.Equal(generic.Indexes(), []int{1}) {
		t.Fatalf("a ConditionFailedError is an idempotency.WriteConditionError: %v", err)
	}
	if err := classifyCommit(cancelled(reason("None"), reason("TransactionConflict"))); !errors.Is(err, idempotency.ErrTransactionConflict) {
		t.Fatalf("conflict: %v", err)
	}
	if err := classifyCommit(cancelled(reason("ThrottlingError"), reason("None"))); errcode.CodeOf(err) != errcode.ServiceUnavailable || !IsThrottle(err) {
		t.Fatalf("throttled: %v", err)
	}
	if err := classifyCommit(cancelled(reason("None"), reason("ItemCollectionSizeLimitExceeded"))); !errors.Is(err, ErrItemCollectionFull) {
		t.Fatalf("full: %v", err)
	}
	broken := reason("ConditionalCheckFailed")
	broken.Item = map[string]types.AttributeValue{"user_id": str("u")}
	if err := classifyCommit(cancelled(broken)); !errors.As(err, &exists) || exists.Existing != nil {
		t.Fatalf("a malformed old item must be read again, not trusted: %v", err)
	}
}

// A record this package did not write is refused whole, not half read:
// every attribute present, each of its type.
func TestDecodeRecordRefusesWhatItDidNotWrite(t *testing.T) {
	good := encodeRecord(idempotency.Record{UserID: "u", Key: "k", PayloadHash: "h", StatusCode: 201, ResponseBody: []byte(`{}`),
		Method: "POST", Route: "/r", CreatedAt: time.Now(), ExpiresAt: time.Now()})
	if _, err := decodeRecord(good); err != nil {
		t.Fatal(err)
	}
	for name := range recordAttributes {
		t.Run(name, func(t *testing.T) {
			missing := maps(good)
			delete(missing, name)
			if _, err := decodeRecord(missing); !errors.Is(err, errBadRecord) {
				t.Fatalf("without %s: %v", name, err)
			}
			retyped := maps(good)
			retyped[name] = &types.AttributeValueMemberBOOL{Value: true}
			if _, err := decodeRecord(retyped); !errors.Is(err, errBadRecord) {
				t.Fatalf("%s of another type: %v", name, err)
			}
		})
	}
}

func maps(m map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
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
	if err := checkTransaction([]types.TransactWriteItem{{Put: &types.Put{Item: big}}}); !errors.Is(err, idempotency.ErrTooLarge) {
		t.Fatalf("an item over 400 KB: %v", err)
	}
	if err := checkTransaction(make([]types.TransactWriteItem, MaxTransactionActions+1)); !errors.Is(err, idempotency.ErrTooLarge) || errcode.CodeOf(err) != errcode.PayloadTooLarge {
		t.Fatalf("101 actions: %v", err)
	}
}
