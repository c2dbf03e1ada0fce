package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// The routes that delete one event: of the caller's own stream, or of a
// space.
const (
	EventPath      = EventsPath + "/{eventId}"
	SpaceEventPath = SpaceEventsPath + "/{eventId}"
)

// deletedAnswer is a deletion's 200.
type deletedAnswer struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

var errBadEventID = errcode.Invalid("eventId is not an event id: a UUID", errcode.Field{Field: "eventId"})

// deleteEvent turns an event into a tombstone at its position and writes
// the deletion's notice at the stream's next (eventstore.Delete).
func deleteEvent(_ *Handler, r *mutation.Request) (mutation.Plan[eventstore.Change], int, error) {
	st, err := stream(r)
	if err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	id, ok := idempotency.ParseUUID(r.PathParams["eventId"])
	if !ok {
		return mutation.Plan[eventstore.Change]{}, 0, errBadEventID
	}
	return mutation.Plan[eventstore.Change]{
		Execute: func(context.Context, time.Time) (idempotency.Execution[eventstore.Change], error) {
			body, err := json.Marshal(deletedAnswer{ID: id, Deleted: true})
			if err != nil {
				return idempotency.Execution[eventstore.Change]{}, err
			}
			return idempotency.Execution[eventstore.Change]{
				Response: idempotency.Response{StatusCode: http.StatusOK, Body: body},
				Writes:   []eventstore.Change{eventstore.Delete(st, id)},
			}, nil
		},
		Refused: func(context.Context, []idempotency.Refusal) error { return errEventExists },
	}, 1, nil
}
