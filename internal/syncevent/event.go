// Package syncevent owns the event a client's sync queue sends: its fields,
// the rules each must meet, the JSON the API answers with, and its position
// in a user's commit order (the paging cursor). It knows neither HTTP nor
// DynamoDB nor idempotency; an event id is read by the same UUID rule as a
// key (idempotency.ParseUUID).
package syncevent

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
)

// MaxTypeLen is the longest event type, in characters.
const MaxTypeLen = 64

// TimestampLayout is the server's timestamp format, ISO 8601 UTC with
// milliseconds (receivedAt, and the ledger's created_at as the seed stores
// it): fixed width, so that timestamps sort as strings in time order.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// The types of the events the service writes itself: a space's
// membership changes, and the notice of a deletion. No client event may
// have one (only these exact types: a client's own "space.…" or "event.…"
// types stay theirs, and a retry of one stored before these existed still
// replays).
const (
	SpaceCreatedType  = "space.created"
	MemberAddedType   = "space.member_added"
	MemberRemovedType = "space.member_removed"
	DeletedType       = "event.deleted"
)

// ReservedTypes lists them.
var ReservedTypes = []string{SpaceCreatedType, MemberAddedType, MemberRemovedType, DeletedType}

// Reserved reports whether typ is the service's own.
func Reserved(typ string) bool { return slices.Contains(ReservedTypes, typ) }

// Event is one stored event of one stream: a user's own, or a space's.
type Event struct {
	// Stream is the stream the event belongs to: its user's id (their own
	// stream), or a space's stream id (eventstore.SpaceStream). It is
	// stored as user_id, the events table's partition key.
	Stream string
	// Author is who wrote an event of a space; empty in a user's own stream.
	Author     string
	ID         string
	Type       string
	OccurredAt string
	ReceivedAt time.Time
	// Position is the event's place in its user's commit order: set by the
	// store when the event commits, and on every event read back.
	Position Position
	// Payload is the payload object as the client sent it, compacted; {}
	// once the event is deleted.
	Payload jsontext.Value
	// Deleted marks a tombstone: the event was deleted, its payload
	// erased; it keeps its position, so that no pull stalls at a gap.
	Deleted bool
}

// invalid is the VALIDATION_FAILED error for fields: its message sums them
// up, its details list them all.
func invalid(fields errcode.FieldErrors) *errcode.Error {
	msg := fmt.Sprintf("Invalid event: field %q: %s", fields[0].Field, fields[0].Message)
	if len(fields) > 1 {
		msg = fmt.Sprintf("Invalid event: %d fields are invalid; the first, %q: %s", len(fields), fields[0].Field, fields[0].Message)
	}
	return errcode.Invalid(msg, fields)
}

// wire is the body's shape; each member is kept raw so that a wrong type
// is reported by field name rather than as a decoding failure.
type wire struct {
	ID         jsontext.Value `json:"id"`
	Type       jsontext.Value `json:"type"`
	OccurredAt jsontext.Value `json:"occurredAt"`
	Payload    jsontext.Value `json:"payload"`
}

const invalidID = "must be a UUID in canonical form (8-4-4-4-12 hexadecimal digits)"

// Parse reads an event from a body that has already been checked to be
// valid I-JSON (idempotency.Canonicalize does it). The payload is kept as
// the client sent it: the canonical form is for comparing bodies, never for
// storing them, so numbers come back spelled as they were sent. The user id
// is not part of the body: the caller sets it from the verified identity.
// An invalid event is an *errcode.Error listing every invalid field.
func Parse(canonical []byte) (Event, error) {
	ev, bad := Read(canonical)
	if bad != nil {
		return Event{}, invalid(bad)
	}
	return ev, nil
}

// Read is Parse for a caller that reports the invalid fields itself (a
// batch names them by the event's index): the event, or every field at
// fault.
func Read(canonical []byte) (Event, errcode.FieldErrors) {
	var w wire
	// The body was validated when it was canonicalized; checking names and
	// UTF-8 again would only cost time.
	err := json.Unmarshal(canonical, &w, json.RejectUnknownMembers(true),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if err != nil {
		return Event{}, decodeError(err)
	}
	var ev Event
	var errs errcode.FieldErrors
	add := func(field, msg string) { errs = append(errs, errcode.FieldError{Field: field, Message: msg}) }

	if s, ok := stringField(w.ID, "id", add); ok {
		if id, ok := idempotency.ParseUUID(s); !ok {
			add("id", invalidID)
		} else {
			ev.ID = id
		}
	}
	if s, ok := stringField(w.Type, "type", add); ok {
		if n := utf8.RuneCountInString(s); n < 1 || n > MaxTypeLen {
			add("type", fmt.Sprintf("must be 1 to %d characters long, got %d", MaxTypeLen, n))
		} else if Reserved(s) {
			add("type", fmt.Sprintf("%q is a type of the service's own events (%s)", s, strings.Join(ReservedTypes, ", ")))
		} else {
			ev.Type = s
		}
	}
	if s, ok := stringField(w.OccurredAt, "occurredAt", add); ok {
		if len(s) > MaxOccurredAtLen {
			add("occurredAt", fmt.Sprintf("must be at most %d characters long", MaxOccurredAtLen))
		} else if _, err := ParseDateTime(s); err != nil {
			add("occurredAt", "must be an RFC 3339 date-time, such as 2026-12-02T14:03:00Z")
		} else {
			ev.OccurredAt = s
		}
	}
	switch {
	case w.Payload == nil:
		add("payload", "is required")
	case w.Payload.Kind() != '{':
		add("payload", "must be a JSON object")
	case depth(w.Payload) > MaxPayloadDepth:
		add("payload", fmt.Sprintf("must not nest arrays and objects more than %d levels deep", MaxPayloadDepth))
	default:
		// Kept as sent, numbers and member order included; only
		// insignificant white space goes. Compact cannot fail on a value
		// the decoder has just read.
		ev.Payload = w.Payload.Clone()
		_ = ev.Payload.Compact()
	}
	if errs != nil {
		return Event{}, errs
	}
	return ev, nil
}

// stringField reads a required JSON string member.
func stringField(v jsontext.Value, field string, add func(field, msg string)) (string, bool) {
	if v == nil {
		add(field, "is required")
		return "", false
	}
	if v.Kind() != '"' {
		add(field, "must be a string")
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		add(field, "must be a string")
		return "", false
	}
	return s, true
}

// decodeError turns a failure to decode the body's shape into field errors.
func decodeError(err error) errcode.FieldErrors {
	var se *json.SemanticError
	// Neither the unknown name nor the decoder's text is echoed: both
	// quote the client's input, and an answer never does.
	if errors.As(err, &se) && errors.Is(err, json.ErrUnknownName) {
		return errcode.FieldErrors{{Field: "body", Message: "has a member other than id, type, occurredAt and payload"}}
	}
	if errors.As(err, &se) && len(se.JSONPointer) == 0 {
		return errcode.FieldErrors{{Field: "body", Message: "must be a JSON object"}}
	}
	return errcode.FieldErrors{{Field: "body", Message: "must be a JSON object of id, type, occurredAt and payload"}}
}

// Created is the 201 body for a stored event.
type Created struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	OccurredAt string `json:"occurredAt"`
	ReceivedAt string `json:"receivedAt"`
}

// Listed is one event in a GET page.
type Listed struct {
	Created
	Author  string         `json:"author,omitempty"`
	Payload jsontext.Value `json:"payload"`
	Deleted bool           `json:"deleted,omitzero"`
}

// CreatedBody is the JSON answered when ev is stored.
func (ev Event) CreatedBody() []byte {
	b, err := json.Marshal(ev.Created())
	if err != nil {
		panic(err) // plain strings always marshal
	}
	return b
}

// Created is ev as the answer to storing it has it.
func (ev Event) Created() Created {
	return Created{ID: ev.ID, Type: ev.Type, OccurredAt: ev.OccurredAt, ReceivedAt: ev.ReceivedAt.UTC().Format(TimestampLayout)}
}

// Listing is ev as a GET page shows it.
func (ev Event) Listing() Listed {
	return Listed{Created: ev.Created(), Author: ev.Author, Payload: ev.Payload, Deleted: ev.Deleted}
}
