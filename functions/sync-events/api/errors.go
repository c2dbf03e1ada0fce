package api

import (
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json"
)

// Error codes of the API.
const (
	CodeValidationFailed     = "VALIDATION_FAILED"
	CodeUnauthorized         = "UNAUTHORIZED"
	CodeNotFound             = "NOT_FOUND"
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeKeyReused            = "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD"
	CodeEventAlreadyExists   = "EVENT_ALREADY_EXISTS"
	CodePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	CodeServiceUnavailable   = "SERVICE_UNAVAILABLE"
	CodeInternal             = "INTERNAL"
	retryAfterSeconds        = 1
)

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

func errorf(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

func validation(message string, details any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeValidationFailed, Message: message, Details: details}
}

func methodNotAllowed(allow string) *Error {
	e := errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "Method not allowed on this route; allowed: "+allow)
	e.header = [2]string{"Allow", allow}
	return e
}

func unavailable(message string) *Error {
	e := errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, message)
	e.header = [2]string{"Retry-After", strconv.Itoa(retryAfterSeconds)}
	return e
}

var (
	errUnauthorized = errorf(http.StatusUnauthorized, CodeUnauthorized, "Authentication required: no user id in the verified token claims")
	errNotFound     = errorf(http.StatusNotFound, CodeNotFound, "No such route")
	errInternal     = errorf(http.StatusInternalServerError, CodeInternal, "Internal error; nothing was stored, retry with the same Idempotency-Key")
	errUnavailable  = unavailable("Service temporarily unavailable; nothing was stored, retry with the same Idempotency-Key")
	errBusy         = unavailable("Another request with this Idempotency-Key is in progress; retry with the same key")
)

// body is the error's JSON.
func (e *Error) body() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		// Details are always plain values; this cannot happen.
		return []byte(`{"error":"INTERNAL","message":"Internal error"}`)
	}
	return b
}
