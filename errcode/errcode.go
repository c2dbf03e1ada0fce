// Package errcode is the error a client of an API is told about: a code it
// can branch on, a sentence for a person, and details in one of a closed
// set of shapes, kept apart from the Go error text that logs read
// (benbjohnson/wtf's coded errors are the model).
//
// It owns the codes any HTTP API has (a request refused as sent, a caller
// refused, a conflict with what is stored, a failure of the service) and
// the shapes of their details. It knows no HTTP and no storage: package
// mutation decides which status a code answers with, and a store or a
// handler decides which code a failure is. Codes are strings: an
// application declares its own (NOTE_NOT_FOUND, say) as Code constants of
// its own package and gives them a status in mutation.Options.Statuses.
package errcode

import (
	"errors"
	"fmt"
	"time"
)

// Code is an error code a client can branch on.
type Code string

// Codes for a request refused as sent: fix it before sending it again.
const (
	ValidationFailed     Code = "VALIDATION_FAILED"
	PayloadTooLarge      Code = "PAYLOAD_TOO_LARGE"
	UnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE"
	NotFound             Code = "NOT_FOUND"
	MethodNotAllowed     Code = "METHOD_NOT_ALLOWED"
)

// Codes for a caller the service will not serve, or not now.
const (
	Unauthorized Code = "UNAUTHORIZED"
	// RateLimited: the caller sent more than their share, and this
	// request was not carried out. Retry after the answer's Retry-After,
	// with the same key.
	RateLimited Code = "RATE_LIMITED"
)

// Codes for a request that conflicts with what is stored.
const (
	// KeyReused: the 409 for a known key with another request.
	KeyReused Code = "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD"
	// KeyInProgress: the 409 for a known key whose first request is
	// still running its steps. Retry after the answer's Retry-After, with
	// the same key.
	KeyInProgress Code = "IDEMPOTENCY_KEY_IN_PROGRESS"
	// Conflict: a condition of the mutation's writes failed, where the
	// mutation did not say more precisely why.
	Conflict Code = "CONFLICT"
)

// Codes for a failure of the service: retry with the same key.
const (
	ServiceUnavailable Code = "SERVICE_UNAVAILABLE"
	Internal           Code = "INTERNAL"
)

// Error is a failure the client is told about: Code to branch on, Message
// to read, Details to point at what was wrong. Err, if set, is the cause,
// for the logs only.
//
// A Message may be left empty where the sentence depends on the request
// rather than on the failure (a store's "temporarily unavailable" reads
// differently for a mutation, which the client retries with its key, and
// for a read): whoever answers words it from the code.
type Error struct {
	Code    Code
	Message string
	Details Details
	// RetryAfter, for a refusal that passes (a rate limit, a busy
	// service), is how long until a retry can succeed; 0 if unknown.
	RetryAfter time.Duration
	Err        error
}

// New is an error with code and message for the client.
func New(code Code, message string) *Error { return &Error{Code: code, Message: message} }

// Invalid is a VALIDATION_FAILED error with details.
func Invalid(message string, details Details) *Error {
	return &Error{Code: ValidationFailed, Message: message, Details: details}
}

// Wrap is err classified as code, with no message of its own: for a
// failure whose sentence its answerer words.
func Wrap(code Code, err error) *Error { return &Error{Code: code, Err: err} }

// Error is the text for logs: the code and the cause where there is one.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Code, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Of is the *Error in err's chain, if there is one.
func Of(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// CodeOf is the code of the *Error in err's chain, or "" if there is none.
func CodeOf(err error) Code {
	if e, ok := Of(err); ok {
		return e.Code
	}
	return ""
}
