// Package errcode owns the error codes a client of the API can branch on
// and the error value that carries one: a code, a sentence for the client
// and optional details, kept apart from the Go error text the logs read.
// Any package can return one; package api alone decides the HTTP status and
// the wording of failures no package words itself (benbjohnson/wtf's
// ErrorCode is the model). It knows no HTTP and no storage.
package errcode

import (
	"errors"
	"fmt"
)

// Code is an error code of the API: the closed list below.
type Code string

// Codes for a request refused as sent: fix it before sending it again.
const (
	ValidationFailed     Code = "VALIDATION_FAILED"
	PayloadTooLarge      Code = "PAYLOAD_TOO_LARGE"
	UnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE"
	NotFound             Code = "NOT_FOUND"
	MethodNotAllowed     Code = "METHOD_NOT_ALLOWED"
)

// Codes for a caller the service will not serve.
const (
	Unauthorized        Code = "UNAUTHORIZED"
	CallerIDUnsupported Code = "CALLER_ID_UNSUPPORTED"
)

// Codes for a request that conflicts with what is stored.
const (
	KeyReused          Code = "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD"
	EventAlreadyExists Code = "EVENT_ALREADY_EXISTS"
	StorageFull        Code = "USER_STORAGE_FULL"
)

// Codes for a failure of the service: retry with the same key.
const (
	ServiceUnavailable Code = "SERVICE_UNAVAILABLE"
	Internal           Code = "INTERNAL"
)

// Error is a failure the client is told about: Code to branch on, Message
// to read, Details to point at what was wrong. Err, if set, is the cause,
// for the logs only.
type Error struct {
	Code    Code
	Message string
	Details any
	Err     error
}

// New is an error with code and message for the client.
func New(code Code, message string) *Error { return &Error{Code: code, Message: message} }

// Invalid is a VALIDATION_FAILED error with details.
func Invalid(message string, details any) *Error {
	return &Error{Code: ValidationFailed, Message: message, Details: details}
}

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
