package notes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// rejectionStore is the ledger store, keeping the items DynamoDB returned
// with failed business conditions for the request's Plan.Rejected: the
// flow hands Rejected only the indexes of the failed writes, and the item
// as it stood is what tells a stale version from a missing note without a
// second call.
type rejectionStore struct{ *dynamodbstore.Store }

func (s *rejectionStore) Commit(ctx context.Context, rec idempotency.Record, writes []write, now time.Time) error {
	err := s.Store.Commit(ctx, rec, writes, now)
	var failed *dynamodbstore.ConditionFailedError
	if slot, ok := ctx.Value(rejectionKey{}).(*rejection); ok && errors.As(err, &failed) {
		slot.failed = failed
	}
	return err
}

// rejection holds one request's failed conditions; the request's context
// carries it from Commit to Rejected, both on the request's goroutine.
type rejection struct {
	failed *dynamodbstore.ConditionFailedError
}

type rejectionKey struct{}

func withRejection(ctx context.Context) context.Context {
	return context.WithValue(ctx, rejectionKey{}, &rejection{})
}

// failedItem is the item write i's failed condition saw, where the backend
// returned it (DynamoDB does with ALL_OLD, unless the item is absent).
func failedItem(ctx context.Context, i int) (map[string]types.AttributeValue, bool) {
	slot, ok := ctx.Value(rejectionKey{}).(*rejection)
	if !ok || slot.failed == nil {
		return nil, false
	}
	for j, idx := range slot.failed.Indexes {
		if idx == i && j < len(slot.failed.Items) && len(slot.failed.Items[j]) > 0 {
			return slot.failed.Items[j], true
		}
	}
	return nil, false
}

// noteExists says whether the caller's note stands, as the failed write
// saw it when the backend returned the item, else by a strongly consistent
// read: an absent item comes back with no ALL_OLD, so a missing note
// always costs that read, on the rejection path only.
func (s *Service) noteExists(ctx context.Context, write int, user, id string) (bool, error) {
	if _, ok := failedItem(ctx, write); ok {
		return true, nil
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.notes), Key: key(user, id), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#id"), ExpressionAttributeNames: map[string]string{"#id": IDAttr},
	})
	if err != nil {
		return false, dynamodbstore.Classify(fmt.Errorf("read note: %w", err))
	}
	return len(out.Item) > 0, nil
}
