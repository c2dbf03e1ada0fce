package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/metrics"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Page sizes of GET. A page is also bounded by bytes (MaxPageResponseBytes),
// so a thousand events fit one when they are small, and a catching-up
// device needs a thousandth as many round trips as it has events.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

var errEventExists = errcode.New(EventAlreadyExists, "An event with this id is already stored")

// postEvent is POST's mutation: one event, stored with the time the server
// received it; its write must be its id's first.
func postEvent(_ *Handler, r *mutation.Request) (mutation.Plan[eventstore.Change], int, error) {
	// The event is read from the body as sent: the canonical form is only
	// for the hash, and storing it would change the client's numbers.
	ev, err := syncevent.Parse(r.Body)
	if err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	if ev.Stream, err = stream(r); err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	return mutation.Plan[eventstore.Change]{
		Execute: func(_ context.Context, now time.Time) (idempotency.Execution[eventstore.Change], error) {
			ev.ReceivedAt = now.Truncate(time.Millisecond)
			return idempotency.Execution[eventstore.Change]{
				Response: idempotency.Response{StatusCode: http.StatusCreated, Body: ev.CreatedBody()},
				Writes:   []eventstore.Change{eventstore.Append(ev)},
			}, nil
		},
		Refused: func(context.Context, []idempotency.Refusal) error { return errEventExists },
	}, 1, nil
}

// listEvents is GET: a page of the caller's events after the cursor.
func (h *Handler) listEvents(r *http.Request) (mutation.Response, outcome) {
	user, err := user(r.Context())
	if err != nil {
		return h.fail(err, r.Method)
	}
	return h.page(r, user, user, nil)
}

// page answers a page of stream's events after the request's cursor, read
// by caller (whose reads the limit counts), once allowed (if set) says
// the caller may read stream.
func (h *Handler) page(r *http.Request, caller, stream string, allowed func(context.Context) error) (mutation.Response, outcome) {
	ctx, method := r.Context(), r.Method
	limit, after, err := pageParams(r.URL.Query())
	if err != nil {
		return h.fail(err, method)
	}
	if wait, ok := h.reads.Take(caller, time.Now()); !ok {
		return h.fail(limited(errReadsLimited, wait), method)
	}
	if allowed != nil {
		if err := allowed(ctx); err != nil {
			return h.fail(err, method)
		}
	}
	p := newPage(limit, MaxPageResponseBytes, after)
	// One more than the page holds is read, so that the last page is
	// known to be last.
	for ev, err := range h.events.Read(ctx, stream, after, limit+1) {
		if err != nil {
			return h.fail(err, method)
		}
		added, err := p.add(ev)
		if err != nil {
			return h.fail(err, method)
		}
		if !added {
			break
		}
	}
	return jsonOK(p.finish()), outcome{result: metrics.OutcomeRead}
}

// jsonOK is a read's 200 with body.
func jsonOK(body []byte) mutation.Response {
	return mutation.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

var errBadCursor = errcode.Invalid("cursor is not a cursor this API returned", errcode.Field{Field: "cursor"})

// pageParams reads a page's query; a parameter sent more than once is
// read as API Gateway hands it, its values joined with commas.
func pageParams(q url.Values) (limit int, after syncevent.Position, _ error) {
	limit = DefaultPageSize
	if vs, ok := q["limit"]; ok {
		v := strings.Join(vs, ",")
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, after, errcode.Invalid(fmt.Sprintf("limit must be a whole number from 1 to %d", MaxPageSize), errcode.Field{Field: "limit"})
		}
		limit = n
	}
	if vs, ok := q["cursor"]; ok {
		v := strings.Join(vs, ",")
		pos, err := syncevent.ParseCursor(v)
		if err != nil {
			return 0, after, errBadCursor
		}
		after = pos
	}
	return limit, after, nil
}

// errReadsLimited is the answer to a read over the user's rate in this
// execution environment.
var errReadsLimited = errcode.New(errcode.RateLimited, "Too many reads from this user: retry after the time in Retry-After")

// limited is the refusal e (a rate limit's) with the wait until a retry
// may pass, wrapping nothing: it is a refusal, logged as one.
func limited(e *errcode.Error, wait time.Duration) error {
	return &errcode.Error{Code: e.Code, Message: e.Message, RetryAfter: wait}
}
