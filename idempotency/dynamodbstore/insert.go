package dynamodbstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
)

// Insert writes rec, alone, unless the ledger holds a record of its user
// and key, live or expired: a record already there is never overwritten,
// so that moving records in from another ledger (cmd/sync-events-import-d1)
// can run twice, and while the service answers requests. written is false
// when one was there. A record DynamoDB could not store (keys or item over
// its limits) is refused before anything is sent: errcode.ValidationFailed
// for the keys, an error wrapping idempotency.ErrTooLarge for the item.
// Other errors are Classify's: throttling (IsThrottle) and the other
// failures a later call can get past are errcode.ServiceUnavailable.
func (s *Store) Insert(ctx context.Context, rec idempotency.Record) (written bool, err error) {
	if err := checkKeys(rec); err != nil {
		return false, err
	}
	item := encodeRecord(rec)
	if n := ItemSize(item); n > MaxItemBytes {
		return false, fmt.Errorf("%w: the record is %d bytes, the limit is %d", idempotency.ErrTooLarge, n, MaxItemBytes)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": SortKey},
	})
	var exists *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exists):
		return false, nil
	}
	return false, Classify(fmt.Errorf("insert idempotency record: %w", err))
}
