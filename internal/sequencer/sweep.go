package sequencer

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/eventtable"
)

// SweepAfter is how long an accepted event waits before a sweep takes it
// as left behind: a stream record reaches the sequencer function in well
// under a second, and a failed batch is retried by the event source
// mapping; a sweep drains what a batch given up (or a record never
// delivered) left pending.
const SweepAfter = time.Minute

// Sweep drains every stream with an event accepted before cutoff still
// pending, found in the table's index of pending events
// (eventtable.PendingIndex), shard after shard. Its Report counts the
// streams found (Streams) and the events placed; Records is how many
// index entries were read.
func Sweep(ctx context.Context, t eventtable.Table, cutoff time.Time) (Report, error) {
	var rep Report
	var streams []string
	seen := map[string]bool{}
	before := eventtable.PendingBefore(cutoff)
	for shard := range eventtable.PendingShards {
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(t.Name),
			IndexName:                 aws.String(eventtable.PendingIndex),
			KeyConditionExpression:    aws.String("#ps = :shard AND #rk < :before"),
			ExpressionAttributeNames:  map[string]string{"#ps": eventtable.AttrPendingShard, "#rk": eventtable.AttrPosition},
			ExpressionAttributeValues: map[string]types.AttributeValue{":shard": eventtable.S(strconv.Itoa(shard)), ":before": eventtable.S(before)},
		}
		for {
			page, err := t.Client.Query(ctx, in)
			if err != nil {
				return rep, dynamodbstore.Classify(fmt.Errorf("query the pending index: %w", err))
			}
			rep.Records += len(page.Items)
			for _, item := range page.Items {
				s, ok := item[eventtable.AttrStream].(*types.AttributeValueMemberS)
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
