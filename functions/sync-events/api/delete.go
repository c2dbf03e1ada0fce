package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/syncevent"
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
// the deletion's notice at the stream's next (package eventlog, delete).
func deleteEvent(_ *Handler, r *mutation.Request) (mutation.Plan[syncevent.Event], int, error) {
	st, err := stream(r)
	if err != nil {
		return mutation.Plan[syncevent.Event]{}, 0, err
	}
	id, ok := idempotency.ParseUUID(r.PathParams["eventId"])
	if !ok {
		return mutation.Plan[syncevent.Event]{}, 0, errBadEventID
	}
	return mutation.Plan[syncevent.Event]{
		Execute: func(_ context.Context, now time.Time) (idempotency.Execution[syncevent.Event], error) {
			payload, err := json.Marshal(eventstore.DeletionPayload{ID: id})
			if err != nil {
				return idempotency.Execution[syncevent.Event]{}, err
			}
			body, err := json.Marshal(deletedAnswer{ID: id, Deleted: true})
			if err != nil {
				return idempotency.Execution[syncevent.Event]{}, err
			}
			at := now.Truncate(time.Millisecond)
			notice := syncevent.Event{
				Stream: st, ID: uuid.NewString(), Type: syncevent.DeletedType,
				OccurredAt: at.UTC().Format(syncevent.TimestampLayout), ReceivedAt: at, Payload: payload,
			}
			return idempotency.Execution[syncevent.Event]{
				Response: idempotency.Response{StatusCode: http.StatusOK, Body: body},
				Writes:   []syncevent.Event{notice},
			}, nil
		},
		Refused: func(context.Context, []idempotency.Refusal) error { return errEventExists },
	}, 1, nil
}
