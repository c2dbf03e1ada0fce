package ddb

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/idempotency"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// All reads every event of every user, as stored, with strong
// consistency: for tests and operators, never the request path. Head items
// are passed over.
func (e *Events) All(ctx context.Context) ([]syncevent.Event, error) {
	all, err := scanAll(ctx, e.client, e.table, func(item map[string]types.AttributeValue) (syncevent.Event, error) {
		if isHead(item) {
			return syncevent.Event{}, nil
		}
		return decodeEvent(item)
	})
	return slices.DeleteFunc(all, func(ev syncevent.Event) bool { return ev.ID == "" }), err
}

// All reads every ledger record, as stored, with strong consistency: for
// tests and operators, never the request path.
func (l *Ledger) All(ctx context.Context) ([]idempotency.Record, error) {
	return scanAll(ctx, l.client, l.table, decodeRecord)
}

func scanAll[T any](ctx context.Context, client *dynamodb.Client, table string, decode func(map[string]types.AttributeValue) (T, error)) ([]T, error) {
	var out []T
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		page, err := client.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", table, err)
		}
		for _, item := range page.Items {
			v, err := decode(item)
			if err != nil {
				return nil, fmt.Errorf("scan %s: %w", table, err)
			}
			out = append(out, v)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
