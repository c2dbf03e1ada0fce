package streamfeed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/sync-events/sync-events/internal/local/streamfeed"
)

// fakeStream is a stream of shards as the Streams API shows them: records
// appended to a shard, a shard closed, a new one appearing; iterators are
// "shard:position", and faults are set per call.
type fakeStream struct {
	mu       sync.Mutex
	shards   []string
	parents  map[string]string
	records  map[string][]string // shard → its records' sequence numbers
	closed   map[string]bool
	failNext map[string]error // call name → its next error
	seq      int
	kinds    []string // the iterator types asked for, in order
}

func newFakeStream() *fakeStream {
	return &fakeStream{records: map[string][]string{}, parents: map[string]string{}, closed: map[string]bool{}, failNext: map[string]error{}}
}

func (f *fakeStream) add(shard string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.shards, shard) {
		f.shards = append(f.shards, shard)
	}
	for range n {
		f.seq++
		f.records[shard] = append(f.records[shard], fmt.Sprintf("%06d", f.seq))
	}
}

func (f *fakeStream) fail(call string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[call] = err
}

func (f *fakeStream) takeFault(call string) error {
	err := f.failNext[call]
	delete(f.failNext, call)
	return err
}

func (f *fakeStream) DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.takeFault("DescribeStream"); err != nil {
		return nil, err
	}
	out := &dynamodbstreams.DescribeStreamOutput{StreamDescription: &st.StreamDescription{}}
	for _, id := range f.shards {
		out.StreamDescription.Shards = append(out.StreamDescription.Shards, st.Shard{ShardId: aws.String(id), ParentShardId: aws.String(f.parents[id])})
	}
	return out, nil
}

func (f *fakeStream) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.takeFault("GetShardIterator"); err != nil {
		return nil, err
	}
	id, recs := aws.ToString(in.ShardId), f.records[aws.ToString(in.ShardId)]
	f.kinds = append(f.kinds, string(in.ShardIteratorType))
	pos := 0
	switch in.ShardIteratorType {
	case st.ShardIteratorTypeLatest:
		pos = len(recs)
	case st.ShardIteratorTypeAfterSequenceNumber:
		pos = slices.Index(recs, aws.ToString(in.SequenceNumber)) + 1
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(id + ":" + strconv.Itoa(pos))}, nil
}

func (f *fakeStream) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.takeFault("GetRecords"); err != nil {
		return nil, err
	}
	id, at, _ := strings.Cut(aws.ToString(in.ShardIterator), ":")
	pos, _ := strconv.Atoi(at)
	recs := f.records[id][pos:]
	out := &dynamodbstreams.GetRecordsOutput{}
	for _, s := range recs {
		out.Records = append(out.Records, st.Record{EventName: st.OperationTypeModify, Dynamodb: &st.StreamRecord{SequenceNumber: aws.String(s)}})
	}
	if !f.closed[id] || len(recs) > 0 {
		out.NextShardIterator = aws.String(id + ":" + strconv.Itoa(pos+len(recs)))
	}
	return out, nil
}

// TestPollFollowsShardsThroughFaults: records written after Poll began,
// in a shard that closes and in its child, each reach the function in
// order, the child's after the parent's, through a failed
// DescribeStream, a refused iterator, a failed read, an expired iterator
// and a read past the trim horizon.
func TestPollFollowsShardsThroughFaults(t *testing.T) {
	f := newFakeStream()
	f.add("A", 2) // before Poll: LATEST skips them
	var mu sync.Mutex
	var got []string
	m := &streamfeed.Mapping{BatchSize: 100, Function: func(_ context.Context, ev events.DynamoDBEvent) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range ev.Records {
			got = append(got, r.Change.SequenceNumber)
		}
		return nil
	}}
	delivered := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	waitFor := func(what string, ok func([]string) bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			if ok(delivered()) {
				return
			}
		}
		t.Fatalf("%s: delivered %v", what, delivered())
	}
	f.fail("DescribeStream", errors.New("throttled"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	ready := make(chan struct{})
	go func() { streamfeed.Poll(ctx, f, "arn", m, time.Millisecond, func() { close(ready) }); close(done) }()
	<-ready       // Poll has its iterators
	f.add("A", 3) // 000003-000005
	waitFor("A's new records", func(d []string) bool { return slices.Contains(d, "000005") })
	f.fail("GetRecords", &st.ExpiredIteratorException{Message: aws.String("expired")})
	f.add("A", 1) // 000006: read through a new iterator after 000005
	waitFor("after an expired iterator", func(d []string) bool { return slices.Contains(d, "000006") })
	f.fail("GetRecords", errors.New("a 500"))
	f.add("A", 1) // 000007
	f.mu.Lock()
	f.closed["A"] = true
	f.mu.Unlock()
	f.fail("GetShardIterator", errors.New("refused once"))
	f.mu.Lock()
	f.parents["B"] = "A"
	f.mu.Unlock()
	f.add("B", 2) // 000008-000009, in A's child, which appears now: from its start, after A's end
	waitFor("B's records", func(d []string) bool { return slices.Contains(d, "000009") })

	cancel()
	<-done
	d := delivered()
	if slices.Contains(d, "000001") || slices.Contains(d, "000002") {
		t.Errorf("records from before Poll began were delivered: %v", d)
	}
	for _, want := range []string{"000003", "000004", "000005", "000006", "000007", "000008", "000009"} {
		if !slices.Contains(d, want) {
			t.Errorf("record %s never delivered: %v", want, d)
		}
	}
	if !slices.IsSorted(d) {
		t.Errorf("out of order: %v", d)
	}
	if !slices.Contains(f.kinds, string(st.ShardIteratorTypeAfterSequenceNumber)) {
		t.Errorf("an expired iterator was not replaced after the last record: %v", f.kinds)
	}
}
