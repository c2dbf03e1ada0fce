package dynamodbstore

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
)

// DynamoDB's limits on key attributes, in bytes of UTF-8: the ledger's
// partition key is the user id, its sort key the idempotency key.
const (
	MaxPartitionKeyBytes = 2048
	MaxSortKeyBytes      = 1024
)

// Refusals of a record whose keys DynamoDB cannot store, before anything
// is sent: an Options.User or Options.Key of the application's own may
// produce one.
var (
	errUserIDTooLong = errcode.New(errcode.ValidationFailed, fmt.Sprintf("The caller's user id is longer than the %d bytes DynamoDB can store", MaxPartitionKeyBytes))
	errKeyTooLong    = errcode.Invalid(fmt.Sprintf("The idempotency key is longer than the %d bytes DynamoDB can store", MaxSortKeyBytes), errcode.Field{Field: "Idempotency-Key"})
)

// checkKeys refuses a record DynamoDB could not store under its keys.
func checkKeys(rec idempotency.Record) error {
	switch {
	case len(rec.UserID) > MaxPartitionKeyBytes:
		return errUserIDTooLong
	case len(rec.Key) > MaxSortKeyBytes:
		return errKeyTooLong
	}
	return nil
}

// DynamoDB's TransactWriteItems limits. One action of every Commit is the
// record, so a mutation has MaxTransactionActions-1 writes at most.
const (
	MaxTransactionActions = 100
	MaxTransactionBytes   = 4 << 20
	MaxItemBytes          = 400 << 10
)

// checkTransaction refuses, before anything is sent, a transaction DynamoDB
// would refuse anyway, so the error is clear and certain.
func checkTransaction(items []types.TransactWriteItem) error {
	if len(items) > MaxTransactionActions {
		return fmt.Errorf("%w: %d actions, the limit is %d", idempotency.ErrTooLarge, len(items), MaxTransactionActions)
	}
	total := 0
	for i, it := range items {
		var n int
		switch {
		case it.Put != nil:
			n = ItemSize(it.Put.Item)
		case it.Update != nil:
			n = ItemSize(it.Update.Key) + ItemSize(it.Update.ExpressionAttributeValues)
		case it.Delete != nil:
			n = ItemSize(it.Delete.Key)
		case it.ConditionCheck != nil:
			n = ItemSize(it.ConditionCheck.Key)
		}
		if n > MaxItemBytes {
			return fmt.Errorf("%w: action %d writes an item of %d bytes, the limit is %d", idempotency.ErrTooLarge, i, n, MaxItemBytes)
		}
		total += n
	}
	if total > MaxTransactionBytes {
		return fmt.Errorf("%w: %d bytes in all, the limit is %d", idempotency.ErrTooLarge, total, MaxTransactionBytes)
	}
	return nil
}

// ItemSize is an item's size as DynamoDB counts it: each attribute's name
// plus its value, numbers counted by their digits (an upper bound of
// DynamoDB's 1 byte per 2 digits), with 3 bytes of overhead per list or map.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		return sum(v.Value, func(s string) int { return len(s) })
	case *types.AttributeValueMemberNS:
		return sum(v.Value, func(s string) int { return len(s) })
	case *types.AttributeValueMemberBS:
		return sum(v.Value, func(b []byte) int { return len(b) })
	case *types.AttributeValueMemberL:
		return 3 + sum(v.Value, func(e types.AttributeValue) int { return 1 + valueSize(e) })
	case *types.AttributeValueMemberM:
		return 3 + ItemSize(v.Value) + len(v.Value)
	}
	return 0
}

func sum[T any](xs []T, size func(T) int) int {
	n := 0
	for _, x := range xs {
		n += size(x)
	}
	return n
}
