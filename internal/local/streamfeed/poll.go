package streamfeed

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// StreamsAPI is what Poll calls of the DynamoDB Streams API; a
// *dynamodbstreams.Client is one.
type StreamsAPI interface {
	DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// shard is where Poll is in one shard.
type shard struct {
	id       string
	parent   string  // read to its end before this one, as Lambda does
	iterator *string // nil: none yet, or to be got again
	last     string  // the sequence number of the last record delivered
	closed   bool    // read to its end
}

// Poll reads the stream streamARN through the DynamoDB Streams API and
// delivers its records to m, shard by shard, every interval (Lambda polls
// a shard about four times a second), until ctx ends. Shards open at the
// start are read from LATEST, shards that appear later (a split, a
// rollover) from their start, so that nothing written after Poll began is
// missed; a shard is read only once its parent is read to its end, so that
// one item's records come in order across a split, as Lambda delivers them.
// A failed call is made again at the next interval, as Lambda's
// poller does; an expired iterator is replaced after the last record
// delivered, and one past the stream's trim horizon by the horizon. A
// batch given up after its retries is skipped: a shard never stalls.
//
// ready, if set, is called once the shards open at the start have their
// iterators: a record written after it is delivered.
func Poll(ctx context.Context, client StreamsAPI, streamARN string, m *Mapping, interval time.Duration, ready func()) {
	var shards []*shard // in the order found
	for first := true; ; {
		// The shards of the first description that succeeds are the ones
		// open at the start.
		if discover(ctx, client, streamARN, &shards, first, m) && first {
			first = false
			if ready != nil {
				ready()
			}
		}
		for _, sh := range shards {
			if !sh.closed && parentRead(shards, sh) {
				readShard(ctx, client, streamARN, sh, m)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// discover adds the shards not seen yet, and reports whether the stream
// was described.
func discover(ctx context.Context, client StreamsAPI, arn string, shards *[]*shard, atStart bool, m *Mapping) bool {
	out, err := client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		if ctx.Err() == nil {
			m.log().Info("describing the stream failed; trying again", "error", err.Error())
		}
		return false
	}
	for _, s := range out.StreamDescription.Shards {
		id := aws.ToString(s.ShardId)
		if slices.ContainsFunc(*shards, func(sh *shard) bool { return sh.id == id }) {
			continue
		}
		sh := &shard{id: id, parent: aws.ToString(s.ParentShardId)}
		kind := st.ShardIteratorTypeTrimHorizon
		if atStart {
			kind = st.ShardIteratorTypeLatest
		}
		sh.iterator = iterator(ctx, client, arn, id, kind, "", m)
		if sh.iterator != nil {
			*shards = append(*shards, sh) // else found again, and asked again, next time
		}
	}
	return true
}

func iterator(ctx context.Context, client StreamsAPI, arn, id string, kind st.ShardIteratorType, after string, m *Mapping) *string {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(id), ShardIteratorType: kind}
	if after != "" {
		in.SequenceNumber = aws.String(after)
	}
	out, err := client.GetShardIterator(ctx, in)
	if err != nil {
		if ctx.Err() == nil {
			m.log().Info("a shard iterator was refused; asking again", "error", err.Error())
		}
		return nil
	}
	return out.ShardIterator
}

// parentRead reports whether sh's parent, if Poll follows it, is read to
// its end.
func parentRead(shards []*shard, sh *shard) bool {
	for _, p := range shards {
		if p.id == sh.parent {
			return p.closed
		}
	}
	return true
}

// readShard delivers what one GetRecords returns and moves sh on.
func readShard(ctx context.Context, client StreamsAPI, arn string, sh *shard, m *Mapping) {
	id := sh.id
	if sh.iterator == nil {
		kind := st.ShardIteratorTypeTrimHorizon
		if sh.last != "" {
			kind = st.ShardIteratorTypeAfterSequenceNumber
		}
		if sh.iterator = iterator(ctx, client, arn, id, kind, sh.last, m); sh.iterator == nil {
			return
		}
	}
	out, err := client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: sh.iterator})
	var expired *st.ExpiredIteratorException
	var trimmed *st.TrimmedDataAccessException
	switch {
	case errors.As(err, &expired):
		sh.iterator = nil // again after the last record delivered
		return
	case errors.As(err, &trimmed):
		sh.iterator, sh.last = nil, "" // again from the trim horizon
		return
	case err != nil:
		if ctx.Err() == nil {
			m.log().Info("reading a shard failed; reading again", "error", err.Error())
		}
		return
	}
	recs := make([]events.DynamoDBEventRecord, 0, len(out.Records))
	for _, r := range out.Records {
		recs = append(recs, lambdaRecord(r))
	}
	if _, err := m.Deliver(ctx, recs); err != nil {
		return // ctx ended: the same records are read again by no one
	}
	if n := len(recs); n > 0 {
		sh.last = recs[n-1].Change.SequenceNumber
	}
	sh.iterator = out.NextShardIterator
	sh.closed = sh.iterator == nil
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
