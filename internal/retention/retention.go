// Package retention removes the events a deployment keeps no longer. From
// a batch of the events table's change-feed records it takes each stream
// whose head moved and trims it: the events received more than the
// policy's Keep ago go, oldest first, below the stream's floor, and a
// device whose cursor is below the floor is then told to start over (410
// CURSOR_EXPIRED). A stream is trimmed when it is written to: one idle for
// longer than Keep keeps its events until its next commit.
//
// It owns which streams a batch trims, with what cutoff, how many at once
// and within what time; the trim itself (the floor raised, the events
// deleted) is eventstore.Table.Trim, as every write of the table is
// package eventstore's.
package retention

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/eventstore"
)

// Trimmer trims one stream: eventstore.Table.
type Trimmer interface {
	Trim(ctx context.Context, stream string, cutoff time.Time, limit int) (eventstore.TrimResult, error)
}

// Policy is how long events stay and how many of one stream's a batch
// removes at most (the rest go with the stream's next batch).
type Policy struct {
	Keep  time.Duration
	Limit int
}

// Report is what a batch did, for the log line: its records, the streams
// they moved, those trimmed, the events removed, and the streams left for
// their next batch because the invocation's time was running out.
type Report struct {
	Records, Streams, Trimmed, Removed, Deferred int
}

// Trims run this many streams at once.
const parallel = 8

// reserve is the time kept back from the invocation's deadline: a stream
// whose trim would start later is deferred (a trim of 1,000 events is 40
// deletes and a few reads, well within it).
const reserve = 20 * time.Second

// Handle trims every stream whose head a record of ev moved, with the
// cutoff now less p.Keep, several at once. A stream that fails is reported
// with the others' results, and the batch is then to be retried (a trim
// done twice removes nothing more). Streams left when ctx's deadline is
// near are deferred, not failed: each is trimmed on at its next commit.
func Handle(ctx context.Context, t Trimmer, p Policy, ev events.DynamoDBEvent, now time.Time) (Report, error) {
	rep := Report{Records: len(ev.Records)}
	moved, _ := eventstore.MovedHeads(ev.Records)
	streams := slices.Sorted(maps.Keys(moved))
	rep.Streams = len(streams)
	cutoff := now.Add(-p.Keep)
	deadline, hasDeadline := ctx.Deadline()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, parallel)
	)
	for _, stream := range streams {
		sem <- struct{}{}
		if hasDeadline && time.Until(deadline) < reserve {
			<-sem
			mu.Lock()
			rep.Deferred++
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := t.Trim(ctx, stream, cutoff, p.Limit)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case res.Removed > 0:
				rep.Trimmed++
				rep.Removed += res.Removed
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return rep, fmt.Errorf("%w: %d of %d streams: %w", ErrTrim, len(errs), len(streams), errors.Join(errs...))
	}
	return rep, nil
}

// ErrTrim reports streams not trimmed; the batch is to be retried.
var ErrTrim = errors.New("retention: trimming failed")
