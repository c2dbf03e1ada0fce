package eventstore

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// Filter is the event source mapping's filter pattern (Lambda event
// filtering) that passes a change-feed record only when it is an accepted
// event's insert: its position pending. A placed event's change, a head
// and every event committed at its head do not pass. The template holds
// the same pattern; a test compares them.
const AcceptedRecordFilter = `{"eventName":["INSERT"],"dynamodb":{"NewImage":{"` + attrPosition + `":{"S":[{"prefix":"` + PendingPrefix + `"}]}}}}`

// maxDrainsAtOnce bounds the streams one batch drains at once.
const maxDrainsAtOnce = 8

// AcceptedStreams reads a batch of change-feed records: the streams with an
// event accepted among them, each once, in the order first seen.
func AcceptedStreams(records []events.DynamoDBEventRecord) []string {
	var streams []string
	seen := map[string]bool{}
	for _, r := range records {
		if r.EventName != string(events.DynamoDBOperationTypeInsert) {
			continue
		}
		img := r.Change.NewImage
		stream, pos := img[attrStream], img[attrPosition]
		if stream.DataType() != events.DataTypeString || pos.DataType() != events.DataTypeString {
			continue
		}
		if _, pending := pendingSince(pos.String()); !pending {
			continue
		}
		if s := stream.String(); !seen[s] {
			seen[s] = true
			streams = append(streams, s)
		}
	}
	return streams
}

// SequenceReport is what one batch did, for its log line: counts only.
type SequenceReport struct {
	Records, Streams, Placed, Failed int
}

// HandleAccepted drains each stream a batch of the table's change-feed records
// names (Accepted), several at once. A stream's drain takes every event pending
// on it, those of earlier batches given up included. Any stream's failure fails
// the batch, to be delivered again: the streams drained meanwhile then cost one
// read each, finding nothing.
func (t Table) HandleAccepted(ctx context.Context, ev events.DynamoDBEvent) (SequenceReport, error) {
	streams := AcceptedStreams(ev.Records)
	rep := SequenceReport{Records: len(ev.Records), Streams: len(streams)}
	err := drainAll(ctx, t, streams, &rep)
	return rep, err
}

// drainAll drains streams, maxDrainsAtOnce at once, counting in rep what
// was placed and which failed.
func drainAll(ctx context.Context, t Table, streams []string, rep *SequenceReport) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxDrainsAtOnce)
	for _, s := range streams {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			n, err := t.Drain(ctx, s)
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
