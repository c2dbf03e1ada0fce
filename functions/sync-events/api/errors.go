package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json"

	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/idempotency"
)

// Error codes of the API: the closed list a client can branch on.
const (
	CodeValidationFailed     = "VALIDATION_FAILED"
	CodeUnauthorized         = "UNAUTHORIZED"
	CodeCallerIDUnsupported  = "CALLER_ID_UNSUPPORTED"
	CodeNotFound             = "NOT_FOUND"
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeKeyReused            = "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD"
	CodeEventAlreadyExists   = "EVENT_ALREADY_EXISTS"
	CodeStorageFull          = "USER_STORAGE_FULL"
	CodePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	CodeServiceUnavailable   = "SERVICE_UNAVAILABLE"
	CodeInternal             = "INTERNAL"
	retryAfterSeconds        = 1
)

// Statuses is every error code the API answers with, and its status: the
// one table that decides which status an error gets.
var Statuses = map[string]int{
	CodeValidationFailed:     http.StatusBadRequest,
	CodeUnauthorized:         http.StatusUnauthorized,
	CodeCallerIDUnsupported:  http.StatusForbidden,
	CodeNotFound:             http.StatusNotFound,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	CodeKeyReused:            http.StatusConflict,
	CodeEventAlreadyExists:   http.StatusConflict,
	CodeStorageFull:          http.StatusConflict,
	CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	CodeServiceUnavailable:   http.StatusServiceUnavailable,
	CodeInternal:             http.StatusInternalServerError,
}

// Error is an answer other than success: a status, a code the client can
// branch on, a sentence a person can read, and optional details.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
	// header is an extra response header, such as Allow or Retry-After.
	header [2]string
}

// newError is the answer for code, its status taken from Statuses.
func newError(code, message string) *Error {
	status, ok := Statuses[code]
	if !ok {
		panic("api: no status for error code " + code)
	}
	return &Error{Status: status, Code: code, Message: message}
}

func validation(message string, details any) *Error {
	e := newError(CodeValidationFailed, message)
	e.Details = details
	return e
}

func methodNotAllowed(allow string) *Error {
	e := newError(CodeMethodNotAllowed, "Method not allowed on this route; allowed: "+allow)
	e.header = [2]string{"Allow", allow}
	return e
}

func unavailable(message string) *Error {
	e := newError(CodeServiceUnavailable, message)
	e.header = [2]string{"Retry-After", strconv.Itoa(retryAfterSeconds)}
	return e
}

var (
	errUnauthorized = newError(CodeUnauthorized, "Authentication required: no user id in the verified token claims")
	errNotFound     = newError(CodeNotFound, "No such route")
	errBusy         = unavailable("Another request with this Idempotency-Key is in progress; retry with the same key")
	// The seed's 409 for a reused key, byte for byte.
	errKeyReused   = newError(CodeKeyReused, "Idempotency key already used with a different payload")
	errEventExists = newError(CodeEventAlreadyExists, "An event with this id is already stored")
	errStorageFull = newError(CodeStorageFull, "This user's stored events have reached the service's storage limit; nothing was stored, and retrying will not help until events are removed")
)

// failure is a failed request's answer, worded for what the request was:
// a mutation can be retried with its key; a read has nothing to protect.
type failure struct{ mutation, read *Error }

var (
	errInternal = failure{
		mutation: newError(CodeInternal, "Internal error; nothing was stored, retry with the same Idempotency-Key"),
		read:     newError(CodeInternal, "Internal error; retry the request"),
	}
	errUnavailable = failure{
		mutation: unavailable("Service temporarily unavailable; nothing was stored, retry with the same Idempotency-Key"),
		read:     unavailable("Service temporarily unavailable; retry the request"),
	}
)

// forMethod is the wording of f for a request of method.
func (f failure) forMethod(method string) *Error {
	if isMutation(method) {
		return f.mutation
	}
	return f.read
}

// failureAnswer maps a failure after the input was accepted to its answer.
// None of them leaves anything written, so each is safe to retry with the
// same key, except where the answer says retrying will not help.
func failureAnswer(err error, method string) *Error {
	switch {
	case errors.Is(err, idempotency.ErrTooLarge):
		return newError(CodePayloadTooLarge, "The mutation exceeds DynamoDB's transaction limits: "+err.Error())
	case errors.Is(err, ddb.ErrItemCollectionFull):
		return errStorageFull
	case errors.Is(err, idempotency.ErrBusy):
		return errBusy
	case ddb.IsTransient(err):
		return errUnavailable.forMethod(method)
	}
	return errInternal.forMethod(method)
}

// body is the error's JSON.
func (e *Error) body() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		// Details are always plain values; this cannot happen.
		return []byte(`{"error":"INTERNAL","message":"Internal error"}`)
	}
	return b
}
