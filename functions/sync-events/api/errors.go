package api

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/errcode"
	"github.com/sync-events/sync-events/internal/idempotency"
)

// statuses is the one table of which status each error code answers with.
var statuses = map[errcode.Code]int{
	errcode.ValidationFailed:     http.StatusBadRequest,
	errcode.Unauthorized:         http.StatusUnauthorized,
	errcode.CallerIDUnsupported:  http.StatusForbidden,
	errcode.NotFound:             http.StatusNotFound,
	errcode.MethodNotAllowed:     http.StatusMethodNotAllowed,
	errcode.KeyReused:            http.StatusConflict,
	errcode.EventAlreadyExists:   http.StatusConflict,
	errcode.StorageFull:          http.StatusConflict,
	errcode.PayloadTooLarge:      http.StatusRequestEntityTooLarge,
	errcode.UnsupportedMediaType: http.StatusUnsupportedMediaType,
	errcode.ServiceUnavailable:   http.StatusServiceUnavailable,
	errcode.Internal:             http.StatusInternalServerError,
}

// Codes is every error code the API answers with, sorted: the OpenAPI
// document's ErrorCode enum must list exactly these.
func Codes() []string {
	out := make([]string, 0, len(statuses))
	for c := range statuses {
		out = append(out, string(c))
	}
	slices.Sort(out)
	return out
}

// Status is the HTTP status code answers with, and false for a code the API
// does not have.
func Status(code string) (int, bool) {
	s, ok := statuses[errcode.Code(code)]
	return s, ok
}

// retryAfterSeconds is the Retry-After of every 503.
const retryAfterSeconds = 1

// answer is an error as the client gets it: a status, the code, the
// sentence and details, and at most one extra header (Allow, Retry-After).
type answer struct {
	status  int
	code    errcode.Code
	message string
	details any
	header  [2]string
}

// answerBody is answer's JSON.
type answerBody struct {
	Code    errcode.Code `json:"error"`
	Message string       `json:"message"`
	Details any          `json:"details,omitempty"`
}

// failed answers errors no package worded itself, by what the request was:
// a mutation can be retried with its key; a read has nothing to protect.
var (
	internalMutation    = errcode.New(errcode.Internal, "Internal error; nothing was stored, retry with the same Idempotency-Key")
	internalRead        = errcode.New(errcode.Internal, "Internal error; retry the request")
	unavailableMutation = errcode.New(errcode.ServiceUnavailable, "Service temporarily unavailable; nothing was stored, retry with the same Idempotency-Key")
	unavailableRead     = errcode.New(errcode.ServiceUnavailable, "Service temporarily unavailable; retry the request")
	errBusy             = errcode.New(errcode.ServiceUnavailable, "Another request with this Idempotency-Key is in progress; retry with the same key")
	errStorageFull      = errcode.New(errcode.StorageFull, "This user's stored events have reached the service's storage limit; nothing was stored, and retrying will not help until events are removed")
	errUnauthorized     = errcode.New(errcode.Unauthorized, "Authentication required: no user id in the verified token claims")
	errNotFound         = errcode.New(errcode.NotFound, "No such route")
	// The seed's 409 for a reused key, byte for byte.
	errKeyReused = errcode.New(errcode.KeyReused, "Idempotency key already used with a different payload")
)

// answerFor is the one place an error becomes an answer. An errcode.Error
// is answered as it says; every other failure after the input was accepted
// is worded here. None of them leaves anything written, so each is safe to
// retry with the same key, except where the answer says retrying will not
// help.
func answerFor(err error, method string) answer {
	mutation := isMutation(method)
	var e *errcode.Error
	switch {
	case errors.As(err, &e):
	case errors.Is(err, idempotency.ErrTooLarge):
		e = errcode.New(errcode.PayloadTooLarge, "The mutation exceeds DynamoDB's transaction limits: "+err.Error())
	case errors.Is(err, ddb.ErrItemCollectionFull):
		e = errStorageFull
	case errors.Is(err, idempotency.ErrBusy):
		e = errBusy
	case ddb.IsTransient(err) && mutation:
		e = unavailableMutation
	case ddb.IsTransient(err):
		e = unavailableRead
	case mutation:
		e = internalMutation
	default:
		e = internalRead
	}
	status, ok := statuses[e.Code]
	if !ok {
		panic("api: no status for error code " + e.Code)
	}
	a := answer{status: status, code: e.Code, message: e.Message, details: e.Details}
	switch e.Code {
	case errcode.ServiceUnavailable:
		a.header = [2]string{"Retry-After", strconv.Itoa(retryAfterSeconds)}
	case errcode.MethodNotAllowed:
		a.header = [2]string{"Allow", e.Details.(allowed).header()}
		a.details = nil
	}
	return a
}

// allowed is the methods a path has, carried by a METHOD_NOT_ALLOWED error
// to its Allow header.
type allowed []string

func (a allowed) header() string { return strings.Join(a, ", ") }

func methodNotAllowed(methods []string) *errcode.Error {
	return &errcode.Error{Code: errcode.MethodNotAllowed, Message: "Method not allowed on this route; allowed: " + allowed(methods).header(), Details: allowed(methods)}
}

// isMutation reports a method that changes state: its failures are worded
// for a retry with the same key.
func isMutation(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// body is the answer's JSON.
func (a answer) body() []byte {
	b, err := json.Marshal(answerBody{Code: a.code, Message: a.message, Details: a.details})
	if err != nil {
		// Details are always plain values; this cannot happen.
		return []byte(`{"error":"INTERNAL","message":"Internal error"}`)
	}
	return b
}
