package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// The batch's limits.
//
// MaxBatchEvents: one TransactWriteItems takes 100 actions; the ledger
// record and the user's head take one each.
//
// MaxBatchBodyBytes: the body reaches the function inside the invocation's
// JSON, as a string in which every '"' and '\' of the body takes two bytes
// (U+2028 and U+2029 likewise twice their three), and Lambda refuses a
// synchronous invocation over 6 MB; 2 MiB doubled leaves room for the
// event's other fields. In DynamoDB it becomes at most 2 MiB of payloads,
// 98 event items' own attributes (up to about 2.5 KB each with the longest
// user id: 245 KB) and a ledger record holding the answer (about 170 bytes
// an event): about 2.4 MB, under the transaction's 4 MB. Each event is also
// held to MAX_BODY_BYTES, as if sent alone, so that it fits its 400 KB item.
const (
	MaxBatchEvents    = dynamodbstore.MaxTransactionActions - 2
	MaxBatchBodyBytes = 2 << 20
)

// batchBody is a batch as sent: the events, each kept raw so that it is
// read as the single endpoint reads a body.
type batchBody struct {
	Events []jsontext.Value `json:"events"`
}

// batchCreated is the batch's 201: each event as the single endpoint's 201
// has it, in the order sent.
type batchCreated struct {
	Events []syncevent.Created `json:"events"`
}

// postBatch is the batch's mutation: 1 to MaxBatchEvents events, stored in
// the order sent, all in one transaction with the ledger record, or none.
func postBatch(h *Handler, r *mutation.Request) (mutation.Plan[eventstore.Change], int, error) {
	st, err := stream(r)
	if err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	most := MaxBatchEvents
	if st != r.User {
		most = MaxSpaceBatchEvents
	}
	evs, err := parseBatch(r.Body, h.maxBodyBytes, most)
	if err != nil {
		return mutation.Plan[eventstore.Change]{}, 0, err
	}
	ids := make([]string, len(evs))
	for i := range evs {
		evs[i].Stream, ids[i] = st, evs[i].ID
	}
	return mutation.Plan[eventstore.Change]{
		Execute: func(_ context.Context, now time.Time) (idempotency.Execution[eventstore.Change], error) {
			answer := batchCreated{Events: make([]syncevent.Created, len(evs))}
			for i := range evs {
				evs[i].ReceivedAt = now.Truncate(time.Millisecond)
				answer.Events[i] = evs[i].Created()
			}
			b, err := json.Marshal(answer)
			if err != nil {
				return idempotency.Execution[eventstore.Change]{}, fmt.Errorf("encode the batch's answer: %w", err)
			}
			return idempotency.Execution[eventstore.Change]{
				Response: idempotency.Response{StatusCode: http.StatusCreated, Body: b},
				Writes:   []eventstore.Change{eventstore.Append(evs...)},
			}, nil
		},
		Refused: func(ctx context.Context, refused []idempotency.Refusal) error {
			return h.alreadyStored(ctx, st, ids, refused)
		},
	}, len(evs), nil
}

// alreadyStored is the batch's 409 when some of its events are stored
// already: details name every one of them, read back (a backend may report
// only the first failed condition), so that the client can drop them all
// and send the rest under a new key.
func (h *Handler) alreadyStored(ctx context.Context, stream string, ids []string, refused []idempotency.Refusal) error {
	stored, err := h.events.Stored(ctx, stream, ids)
	if err != nil {
		return err
	}
	if len(stored) == 0 { // erased meanwhile: name what the transaction said
		for _, r := range refused {
			stored = append(stored, ids[r.Index])
		}
	}
	return &errcode.Error{Code: EventAlreadyExists,
		Message: fmt.Sprintf("%d of the batch's events are already stored; nothing was stored: send the others under a new key", len(stored)),
		Details: errcode.IDs{IDs: stored}}
}

// parseBatch reads a batch body: an object whose one member, events, holds
// 1 to most events, each read as the single endpoint reads one
// and at most eventLimit bytes, no two with one id. Every bad event is
// named, by index and field, in one 400.
func parseBatch(body []byte, eventLimit, most int) ([]syncevent.Event, error) {
	var b batchBody
	if err := json.Unmarshal(body, &b, json.RejectUnknownMembers(true)); err != nil || b.Events == nil {
		return nil, errcode.Invalid(`Invalid batch: the body must be an object with one member, "events", an array of events`, errcode.Field{Field: "body"})
	}
	if n := len(b.Events); n < 1 || n > most {
		return nil, errcode.Invalid(fmt.Sprintf("Invalid batch: it must hold 1 to %d events, got %d", most, n), errcode.Field{Field: "events"})
	}
	evs := make([]syncevent.Event, len(b.Events))
	var bad errcode.IndexedFieldErrors
	first := map[string]int{}
	for i, raw := range b.Events {
		if len(raw) > eventLimit {
			return nil, &errcode.Error{Code: errcode.PayloadTooLarge,
				Message: fmt.Sprintf("Event %d of the batch exceeds %d bytes", i, eventLimit), Details: errcode.Index{Index: i}}
		}
		ev, fields := syncevent.Read(raw)
		if fields != nil {
			for _, f := range fields {
				bad = append(bad, errcode.IndexedFieldError{Index: i, FieldError: f})
			}
			continue
		}
		if j, seen := first[ev.ID]; seen {
			bad = append(bad, errcode.IndexedFieldError{Index: i, FieldError: errcode.FieldError{Field: "id", Message: fmt.Sprintf("repeats the id of event %d", j)}})
			continue
		}
		first[ev.ID], evs[i] = i, ev
	}
	if bad != nil {
		return nil, errcode.Invalid(fmt.Sprintf("Invalid batch: %d problems; the first, event %d, field %q: %s",
			len(bad), bad[0].Index, bad[0].Field, bad[0].Message), slices.Clip(bad))
	}
	return evs, nil
}
