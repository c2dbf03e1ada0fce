package streamfeed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Poll reads the stream streamARN through the DynamoDB Streams API and
// delivers its records to m, shard by shard, until ctx ends: as Lambda's
// event source mapping does, from each shard's iterator, every interval
// (Lambda polls a shard about four times a second). Shards open at the
// start are read from LATEST, shards that appear later from their start
// (TRIM_HORIZON), so that nothing written after Poll began is missed. A
// batch given up after its retries is skipped: a shard never stalls.
func Poll(ctx context.Context, client *dynamodbstreams.Client, streamARN string, m *Mapping, interval time.Duration) error {
	iterators := map[string]*string{} // shard id → next iterator; nil: the shard is closed and read
	first := true
	for {
		if err := discoverShards(ctx, client, streamARN, iterators, first); err != nil {
			return err
		}
		first = false
		for id, it := range iterators {
			if it == nil {
				continue
			}
			next, err := readShard(ctx, client, it, m)
			var expired *st.ExpiredIteratorException
			if errors.As(err, &expired) {
				// Found again at the next discovery, from the shard's
				// start: pokes delivered twice do no harm.
				delete(iterators, id)
				continue
			}
			if err != nil {
				return fmt.Errorf("streamfeed: shard %s: %w", id, err)
			}
			iterators[id] = next
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// discoverShards adds an iterator for each shard not seen yet.
func discoverShards(ctx context.Context, client *dynamodbstreams.Client, arn string, iterators map[string]*string, atStart bool) error {
	out, err := client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		return fmt.Errorf("streamfeed: describe stream: %w", err)
	}
	for _, sh := range out.StreamDescription.Shards {
		id := aws.ToString(sh.ShardId)
		if _, seen := iterators[id]; seen {
			continue
		}
		kind := st.ShardIteratorTypeTrimHorizon
		if atStart {
			kind = st.ShardIteratorTypeLatest
		}
		it, err := client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: kind})
		if err != nil {
			return fmt.Errorf("streamfeed: shard iterator: %w", err)
		}
		iterators[id] = it.ShardIterator
	}
	return nil
}

// readShard delivers what one GetRecords returns and gives the next
// iterator (nil once the shard is closed and read).
func readShard(ctx context.Context, client *dynamodbstreams.Client, it *string, m *Mapping) (*string, error) {
	out, err := client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it})
	var expired *st.ExpiredIteratorException
	if errors.As(err, &expired) {
		return nil, err
	}
	if err != nil {
		// Read again next time, as Lambda does.
		m.log().Info("stream read failed; reading again", "error", err.Error())
		return it, nil
	}
	recs := make([]events.DynamoDBEventRecord, 0, len(out.Records))
	for _, r := range out.Records {
		recs = append(recs, lambdaRecord(r))
	}
	if _, err := m.Deliver(ctx, recs); err != nil {
		return it, err
	}
	return out.NextShardIterator, nil
}

// lambdaRecord is r as Lambda hands it to a function.
func lambdaRecord(r st.Record) events.DynamoDBEventRecord {
	out := events.DynamoDBEventRecord{
		EventID:      aws.ToString(r.EventID),
		EventName:    string(r.EventName),
		EventSource:  "aws:dynamodb",
		EventVersion: aws.ToString(r.EventVersion),
		AWSRegion:    aws.ToString(r.AwsRegion),
	}
	if d := r.Dynamodb; d != nil {
		out.Change = events.DynamoDBStreamRecord{
			Keys:           attributes(d.Keys),
			NewImage:       attributes(d.NewImage),
			OldImage:       attributes(d.OldImage),
			SequenceNumber: aws.ToString(d.SequenceNumber),
			SizeBytes:      aws.ToInt64(d.SizeBytes),
			StreamViewType: string(d.StreamViewType),
		}
		if d.ApproximateCreationDateTime != nil {
			out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
		}
	}
	return out
}

// attributes converts a stream image to Lambda's attribute values.
func attributes(img map[string]st.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if img == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(img))
	for k, v := range img {
		out[k] = attribute(v)
	}
	return out
}

func attribute(v st.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *st.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *st.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *st.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *st.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *st.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *st.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *st.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *st.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *st.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = attribute(e)
		}
		return events.NewListAttribute(l)
	case *st.AttributeValueMemberM:
		return events.NewMapAttribute(attributes(v.Value))
	default:
		return events.NewNullAttribute()
	}
}
