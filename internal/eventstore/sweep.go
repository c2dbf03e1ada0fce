package eventstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// SweepAfter is how long an accepted event waits before a sweep takes it
// as left behind: a change-feed record reaches the sequencer function in well
// under a second, and a failed batch is retried by the event source
// mapping; a sweep drains what a batch given up (or a record never
// delivered) left pending.
const SweepAfter = time.Minute

// Sweep drains every stream with an event accepted before cutoff still
// pending, found in the table's index of pending events
// (PendingIndex), shard after shard. Its SequenceReport counts the
// streams found (Streams) and the events placed; Records is how many
// index entries were read.
func (t Table) Sweep(ctx context.Context, cutoff time.Time) (SequenceReport, error) {
	var rep SequenceReport
	var streams []string
	seen := map[string]bool{}
	before := pendingBefore(cutoff)
	for shard := range pendingShards {
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(t.Name),
			IndexName:                 aws.String(PendingIndex),
			KeyConditionExpression:    aws.String("#ps = :shard AND #rk < :before"),
			ExpressionAttributeNames:  map[string]string{"#ps": attrPendingShard, "#rk": attrPosition},
			ExpressionAttributeValues: map[string]types.AttributeValue{":shard": S(strconv.Itoa(shard)), ":before": S(before)},
		}
		for {
			page, err := t.Client.Query(ctx, in)
			if err != nil {
				return rep, dynamodbstore.Classify(fmt.Errorf("query the pending index: %w", err))
			}
			rep.Records += len(page.Items)
			for _, item := range page.Items {
				s, ok := item[attrStream].(*types.AttributeValueMemberS)
				if ok && !seen[s.Value] {
					seen[s.Value] = true
					streams = append(streams, s.Value)
				}
			}
			if len(page.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = page.LastEvaluatedKey
		}
	}
	rep.Streams = len(streams)
	err := drainAll(ctx, t, streams, &rep)
	return rep, err
}
