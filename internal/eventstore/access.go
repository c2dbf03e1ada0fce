package eventstore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// Table is the events table called Name, reached through Client.
type Table struct {
	Client *dynamodb.Client
	Name   string
}

// get reads stream's item id with strong consistency (none: an empty
// item); what names it in an error, which is classified
// (dynamodbstore.Classify).
func (t Table) get(ctx context.Context, stream, id, what string) (map[string]types.AttributeValue, error) {
	out, err := t.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(t.Name),
		Key:            Key(stream, id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, dynamodbstore.Classify(fmt.Errorf("read %s: %w", what, err))
	}
	return out.Item, nil
}

// readFloor reads stream's floor with strong consistency.
func (t Table) readFloor(ctx context.Context, stream string) (floorItem, error) {
	item, err := t.get(ctx, stream, floorID, "the floor")
	if err != nil {
		return floorItem{}, err
	}
	return decodeFloor(item)
}

// put is the write of stream's item id with attrs besides its key.
func (t Table) put(stream, id string, attrs map[string]types.AttributeValue) types.TransactWriteItem {
	item := Key(stream, id)
	for k, v := range attrs {
		item[k] = v
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(t.Name), Item: item}}
}

// putNew is Put conditioned on the item not being there.
func (t Table) putNew(stream, id string, attrs map[string]types.AttributeValue) types.TransactWriteItem {
	w := t.put(stream, id, attrs)
	w.Put.ConditionExpression = aws.String("attribute_not_exists(#id)")
	w.Put.ExpressionAttributeNames = map[string]string{"#id": attrID}
	return w
}

// untilProcessed runs batch, when there is work, until it reports none
// left unprocessed, after a jittered backoff before each run but the
// first: what DynamoDB asks of a client given unprocessed items. what
// names the work in an error.
func untilProcessed(ctx context.Context, what string, work bool, batch func() (left bool, err error)) error {
	for attempt := 0; work; attempt++ {
		if attempt > 0 {
			if err := unprocessedBackoff.Wait(ctx, attempt); err != nil {
				return dynamodbstore.Classify(fmt.Errorf("%s: %w", what, err))
			}
		}
		var err error
		if work, err = batch(); err != nil {
			return dynamodbstore.Classify(fmt.Errorf("%s: %w", what, err))
		}
	}
	return nil
}

// unprocessedBackoff is "full jitter" up to 25 ms doubled per attempt,
// capped at 1 s: what AWS asks of a client given unprocessed keys.
var unprocessedBackoff = idempotency.Backoff{Base: 25 * time.Millisecond, Max: time.Second}
