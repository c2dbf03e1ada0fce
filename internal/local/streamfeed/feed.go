// Package streamfeed delivers a DynamoDB table's stream records to a
// function the way Lambda's event source mapping does, for make run and
// tests: each record matched against the mapping's filter pattern, the
// matches in batches, and a failed batch delivered again, whole, after a
// backoff, until MaxRetries (the mapping's MaximumRetryAttempts), when it
// is dropped and the shard moves on.
//
// It owns that delivery and reading a stream through the DynamoDB Streams
// API (Poll). It knows nothing of what the records mean; it is never in a
// Lambda binary (in AWS, Lambda itself does all this).
package streamfeed

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Mapping is an event source mapping: where batches go and how.
type Mapping struct {
	// Function is the handler the batches are delivered to.
	Function func(context.Context, events.DynamoDBEvent) error
	// Filter is a Lambda filter pattern (JSON); a record passes when its
	// JSON form matches. Empty: every record passes.
	Filter string
	// BatchSize is the most records a batch holds (Lambda's BatchSize).
	BatchSize int
	// MaxRetries is how often a failed batch is delivered again before it
	// is dropped (Lambda's MaximumRetryAttempts).
	MaxRetries int
	// RetryBase is the first wait before a retry; each doubles it.
	RetryBase time.Duration
	Log       *slog.Logger
}

// Stats is what a Deliver came to.
type Stats struct {
	Filtered  int // records the filter dropped
	Batches   int // batches delivered, each counted once
	Attempts  int // invocations, retries included
	Dropped   int // records of batches given up after MaxRetries
	Delivered int // records of batches the function took
}

// Deliver hands recs, in order, to the function, and returns once each
// batch was taken or given up. It stops early when ctx ends.
func (m *Mapping) Deliver(ctx context.Context, recs []events.DynamoDBEventRecord) (Stats, error) {
	var st Stats
	var pattern map[string]any
	if m.Filter != "" {
		if err := json.Unmarshal([]byte(m.Filter), &pattern); err != nil {
			return st, fmt.Errorf("streamfeed: filter pattern: %w", err)
		}
	}
	passed := make([]events.DynamoDBEventRecord, 0, len(recs))
	for _, r := range recs {
		if pattern == nil || matchRecord(pattern, r) {
			passed = append(passed, r)
		} else {
			st.Filtered++
		}
	}
	size := max(m.BatchSize, 1)
	for start := 0; start < len(passed); start += size {
		batch := passed[start:min(start+size, len(passed))]
		st.Batches++
		if err := m.deliverBatch(ctx, batch, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

// deliverBatch invokes the function with batch until it succeeds or the
// retries are spent.
func (m *Mapping) deliverBatch(ctx context.Context, batch []events.DynamoDBEventRecord, st *Stats) error {
	wait := m.RetryBase
	for attempt := 0; ; attempt++ {
		st.Attempts++
		err := m.Function(ctx, events.DynamoDBEvent{Records: batch})
		if err == nil {
			st.Delivered += len(batch)
			return nil
		}
		if attempt >= m.MaxRetries {
			st.Dropped += len(batch)
			m.log().Warn("stream batch dropped after its retries", "records", len(batch), "attempts", attempt+1, "error", err.Error())
			return nil
		}
		m.log().Info("stream batch failed; delivering it again", "records", len(batch), "attempt", attempt+1, "error", err.Error())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func (m *Mapping) log() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}

// matchRecord applies a filter pattern to r's JSON form, as Lambda event
// filtering does for the subset the templates use: an object matches
// field by field, an array of values matches a field equal to one of them
// or, for {"prefix": p} among them, a string beginning with p.
func matchRecord(pattern map[string]any, r events.DynamoDBEventRecord) bool {
	b, err := json.Marshal(r)
	if err != nil {
		return false
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return false
	}
	return matches(pattern, doc)
}

func matches(pattern, value any) bool {
	switch p := pattern.(type) {
	case map[string]any:
		obj, ok := value.(map[string]any)
		if !ok {
			return false
		}
		for k, sub := range p {
			v, ok := obj[k]
			if !ok || !matches(sub, v) {
				return false
			}
		}
		return true
	case []any:
		for _, want := range p {
			if want == value || prefixed(want, value) {
				return true
			}
		}
		return false
	default:
		return false
	}
}

// prefixed reports whether want is Lambda's {"prefix": p} and value a
// string beginning with p.
func prefixed(want, value any) bool {
	rule, ok := want.(map[string]any)
	p, isString := rule["prefix"].(string)
	v, valueString := value.(string)
	return ok && len(rule) == 1 && isString && valueString && strings.HasPrefix(v, p)
}
