package streamfeed

import (
	"context"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// Synthesized stands in for a stream where the backend writes no stream
// records for transactions (kumo): Note says that a key's item may have
// changed, and Run reads each noted item as it is now and delivers its
// record to the mapping, the keys noted meanwhile in one batch. A key noted
// many times before Run reads it makes one record, as a stream's several
// records of one item make one poke.
type Synthesized struct {
	// Read is the record of key's item now; ok false when there is none.
	Read func(ctx context.Context, key string) (rec events.DynamoDBEventRecord, ok bool, err error)

	mu      sync.Mutex
	pending map[string]struct{}
	order   []string
	wake    chan struct{}
	once    sync.Once
}

func (s *Synthesized) init() {
	s.once.Do(func() {
		s.pending = map[string]struct{}{}
		s.wake = make(chan struct{}, 1)
	})
}

// Note marks key's item as changed.
func (s *Synthesized) Note(key string) {
	s.init()
	s.mu.Lock()
	if _, ok := s.pending[key]; !ok {
		s.pending[key] = struct{}{}
		s.order = append(s.order, key)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run delivers noted changes to m until ctx ends.
func (s *Synthesized) Run(ctx context.Context, m *Mapping) {
	s.init()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.mu.Lock()
		keys := s.order
		s.pending, s.order = map[string]struct{}{}, nil
		s.mu.Unlock()
		recs := make([]events.DynamoDBEventRecord, 0, len(keys))
		for _, k := range keys {
			rec, ok, err := s.Read(ctx, k)
			if err != nil {
				m.log().Warn("reading a changed item failed; its record is skipped", "error", err.Error())
				continue
			}
			if ok {
				recs = append(recs, rec)
			}
		}
		m.Deliver(ctx, recs) //nolint:errcheck // only ctx's end, which ends Run too
	}
}
