package eventstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sync-events/sync-events/idempotency"
)

// Worker drains streams in the background when told of an accept, in the
// process that accepts them: make run's and the tests' sequencer (deployed, the
// sequencer function runs HandleAccepted on the table's change feed instead).
// One Worker serves a process; a Wake while its stream drains makes one more
// drain after it, so no accept is missed and wakes do not pile up.
type Worker struct {
	t   Table
	log *slog.Logger
	ctx context.Context

	mu      sync.Mutex
	state   map[string]int // stream: 1 draining, 2 draining and woken again
	idle    *sync.Cond
	stopped bool
	stop    context.CancelFunc
	placed  int
	onPlace func(stream string)
}

// OnPlaced has w tell f of each stream it placed events of, after the
// drain that placed them: make run's live stand-in pokes from it, as the
// head change the sequencer function's pass makes pokes deployed. Call
// it before the first Wake.
func (w *Worker) OnPlaced(f func(stream string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onPlace = f
}

// Placed is how many events w's drains placed so far.
func (w *Worker) Placed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.placed
}

// NewWorker is a Worker over t, logging failed drains to log (nil: none).
func NewWorker(t Table, log *slog.Logger) *Worker {
	ctx, stop := context.WithCancel(context.Background())
	w := &Worker{t: t, log: log, ctx: ctx, stop: stop, state: map[string]int{}}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// Wake tells w that stream has an accepted event.
func (w *Worker) Wake(stream string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	switch w.state[stream] {
	case 0:
		w.state[stream] = 1
		go w.run(stream)
	case 1:
		w.state[stream] = 2
	}
}

// retry is the wait between failed drains: a pass failing on a fault
// the tests inject, or a backend briefly down.
var retry = idempotency.Backoff{Base: 10 * time.Millisecond, Max: time.Second}

func (w *Worker) run(stream string) {
	var head *Head // as the last drain left it: the next reads none
	for attempt := 0; ; {
		n, last, err := drain(w.ctx, w.t, stream, head)
		head = last
		w.mu.Lock()
		w.placed += n
		if n > 0 && w.onPlace != nil {
			w.onPlace(stream)
		}
		switch {
		case w.stopped:
			delete(w.state, stream)
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		case err == nil && w.state[stream] == 1:
			delete(w.state, stream)
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		}
		w.state[stream] = 1
		w.mu.Unlock()
		if err == nil {
			attempt = 0
			continue
		}
		attempt++
		if w.log != nil {
			w.log.Warn("sequencing failed; retrying", "error", err.Error(), "attempt", attempt)
		}
		_ = retry.Wait(w.ctx, attempt)
	}
}

// Idle waits until no drain runs.
func (w *Worker) Idle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.state) > 0 {
		w.idle.Wait()
	}
}

// IdleWithin waits up to d until no drain runs, and reports whether
// none does: a drain that keeps failing (a pass that cannot commit) is
// seen as not idle rather than waited on forever.
func (w *Worker) IdleWithin(d time.Duration) bool {
	done := make(chan struct{})
	go func() { w.Idle(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Close stops w's drains (a pass under way is cancelled: nothing is
// half-written, a transaction commits whole or not) and waits for them.
func (w *Worker) Close() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.stop()
	w.Idle()
}
