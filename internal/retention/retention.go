// Package retention removes the events a deployment keeps no longer. From
// a batch of the events table's stream records it takes each stream whose
// head moved and trims it: the events received more than the policy's
// Keep ago go, oldest first, below the stream's floor (eventlog.Log.Trim),
// and a device whose cursor is below the floor is then told to start over
// (410 CURSOR_EXPIRED). A stream is trimmed when it is written to: one
// idle for longer than Keep keeps its events until its next commit.
//
// It owns which streams a batch trims and with what cutoff; the floor,
// the deletes and what a read below the floor answers are package
// eventlog's, and reading the stream is Lambda's event source mapping's.
package retention

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/eventlog"
)

// Trimmer trims one stream: *eventlog.Log.
type Trimmer interface {
	Trim(ctx context.Context, stream string, cutoff time.Time, limit int) (eventlog.TrimResult, error)
}

// Policy is how long events stay and how many of one stream's a batch
// removes at most (the rest go with the stream's next batch).
type Policy struct {
	Keep  time.Duration
	Limit int
}

// Report is what a batch did, for the log line.
type Report struct {
	Records, Streams, Trimmed, Removed int
}

// Handle trims every stream whose head a record of ev moved, with the
// cutoff now less p.Keep. A stream that fails is reported with the others'
// results; the batch is then to be retried (a trim done twice removes
// nothing more).
func Handle(ctx context.Context, t Trimmer, p Policy, ev events.DynamoDBEvent, now time.Time) (Report, error) {
	rep := Report{Records: len(ev.Records)}
	var streams []string
	for _, r := range ev.Records {
		if stream, _, ok := eventlog.HeadChange(r); ok && !slices.Contains(streams, stream) {
			streams = append(streams, stream)
		}
	}
	rep.Streams = len(streams)
	cutoff := now.Add(-p.Keep)
	var errs []error
	for _, stream := range streams {
		res, err := t.Trim(ctx, stream, cutoff, p.Limit)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if res.Removed > 0 {
			rep.Trimmed++
			rep.Removed += res.Removed
		}
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("%w: %d of %d streams: %w", ErrTrim, len(errs), len(streams), errors.Join(errs...))
	}
	return rep, nil
}

// ErrTrim reports streams not trimmed; the batch is to be retried.
var ErrTrim = errors.New("retention: trimming failed")
