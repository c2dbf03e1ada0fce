package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/errcode"
	"github.com/sync-events/sync-events/internal/idempotency"
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

var errEventExists = errcode.New(errcode.EventAlreadyExists, "An event with this id is already stored")

// postEvent is POST's mutation: one event, stored with the time the server
// received it; its write must be its id's first.
func postEvent(_ *Handler, r *request, body []byte) (plan, error) {
	// The event is read from the body as sent: the canonical form is only
	// for the hash, and storing it would change the client's numbers.
	ev, err := syncevent.Parse(body)
	if err != nil {
		return plan{}, err
	}
	ev.UserID = r.user
	return plan{
		execute: func(_ context.Context, now time.Time) (idempotency.Execution[syncevent.Event], error) {
			ev.ReceivedAt = now.Truncate(time.Millisecond)
			return idempotency.Execution[syncevent.Event]{
				Response: idempotency.Response{StatusCode: http.StatusCreated, Body: ev.CreatedBody()},
				Writes:   []syncevent.Event{ev},
			}, nil
		},
		rejected: func(context.Context, []int) error { return errEventExists },
		events:   1,
	}, nil
}

// listEvents is GET: a page of the caller's events after the cursor.
func (h *Handler) listEvents(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, outcome) {
	method := r.RequestContext.HTTP.Method
	user, err := userID(r.APIGatewayV2HTTPRequest)
	if err != nil {
		return fail(err, method, "")
	}
	limit, after, err := pageParams(r.QueryStringParameters)
	if err != nil {
		return fail(err, method, "")
	}
	p := newPage(limit, MaxPageResponseBytes, after)
	// One more than the page holds is read, so that the last page is
	// known to be last.
	for ev, err := range h.events.After(ctx, user, after, limit+1) {
		if err != nil {
			return fail(err, method, "")
		}
		added, err := p.add(ev)
		if err != nil {
			return fail(err, method, "")
		}
		if !added {
			break
		}
	}
	return jsonResponse(http.StatusOK, p.finish()), outcome{result: metrics.OutcomeRead}
}

var errBadCursor = errcode.Invalid("cursor is not a cursor this API returned", map[string]string{"field": "cursor"})

func pageParams(q map[string]string) (limit int, after syncevent.Position, _ error) {
	limit = DefaultPageSize
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, after, errcode.Invalid(fmt.Sprintf("limit must be a whole number from 1 to %d", MaxPageSize), map[string]string{"field": "limit"})
		}
		limit = n
	}
	if v, ok := q["cursor"]; ok {
		pos, err := syncevent.ParseCursor(v)
		if err != nil {
			return 0, after, errBadCursor
		}
		after = pos
	}
	return limit, after, nil
}
