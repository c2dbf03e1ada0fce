package sequencer

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/eventtable"
)

// Filter is the event source mapping's filter pattern (Lambda event
// filtering) that passes a stream record only when it is an accepted
// event's insert: its position pending. A placed event's change, a head
// and every event committed at its head do not pass. The template holds
// the same pattern; a test compares them.
const Filter = `{"eventName":["INSERT"],"dynamodb":{"NewImage":{"` + eventtable.AttrPosition + `":{"S":[{"prefix":"` + eventtable.PendingPrefix + `"}]}}}}`

// maxDrainsAtOnce bounds the streams one batch drains at once.
const maxDrainsAtOnce = 8

// Accepted reads a batch of stream records: the streams with an event
// accepted among them, each once, in the order first seen.
func Accepted(records []events.DynamoDBEventRecord) []string {
	var streams []string
	seen := map[string]bool{}
	for _, r := range records {
		if r.EventName != string(events.DynamoDBOperationTypeInsert) {
			continue
		}
		img := r.Change.NewImage
		stream, pos := img[eventtable.AttrStream], img[eventtable.AttrPosition]
		if stream.DataType() != events.DataTypeString || pos.DataType() != events.DataTypeString {
			continue
		}
		if _, pending := eventtable.PendingSince(pos.String()); !pending {
			continue
		}
		if s := stream.String(); !seen[s] {
			seen[s] = true
			streams = append(streams, s)
		}
	}
	return streams
}

// Report is what one batch did, for its log line: counts only.
type Report struct {
	Records, Streams, Placed, Failed int
}

// Handle drains each stream a batch of the table's stream records names
// (Accepted), several at once. A stream's drain takes every event
// pending on it, those of earlier batches given up included. Any
// stream's failure fails the batch, to be delivered again: the streams
// drained meanwhile then cost one read each, finding nothing.
func Handle(ctx context.Context, t eventtable.Table, ev events.DynamoDBEvent) (Report, error) {
	streams := Accepted(ev.Records)
	rep := Report{Records: len(ev.Records), Streams: len(streams)}
	err := drainAll(ctx, t, streams, &rep)
	return rep, err
}

// drainAll drains streams, maxDrainsAtOnce at once, counting in rep what
// was placed and which failed.
func drainAll(ctx context.Context, t eventtable.Table, streams []string, rep *Report) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxDrainsAtOnce)
	for _, s := range streams {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			n, err := Drain(ctx, t, s)
			mu.Lock()
			defer mu.Unlock()
			rep.Placed += n
			if err != nil {
				rep.Failed++
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
