package mutation

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
)

// DefaultStatuses is the status each of package errcode's codes answers
// with. Options.Statuses adds an application's own codes, or changes
// these.
func DefaultStatuses() map[errcode.Code]int {
	return map[errcode.Code]int{
		errcode.ValidationFailed:     http.StatusBadRequest,
		errcode.Unauthorized:         http.StatusUnauthorized,
		errcode.RateLimited:          http.StatusTooManyRequests,
		errcode.NotFound:             http.StatusNotFound,
		errcode.MethodNotAllowed:     http.StatusMethodNotAllowed,
		errcode.KeyReused:            http.StatusConflict,
		errcode.KeyInProgress:        http.StatusConflict,
		errcode.Conflict:             http.StatusConflict,
		errcode.PayloadTooLarge:      http.StatusRequestEntityTooLarge,
		errcode.UnsupportedMediaType: http.StatusUnsupportedMediaType,
		errcode.ServiceUnavailable:   http.StatusServiceUnavailable,
		errcode.Internal:             http.StatusInternalServerError,
	}
}

// RetryAfterSeconds is the Retry-After of a 503, and the least of a 429's
// (an errcode.Error's RetryAfter, rounded up to whole seconds, may ask
// for longer).
const RetryAfterSeconds = 1

// Sentences for failures no one worded, by whether the request was a
// mutation, which the client retries with its key, or a read; and for a
// mutation, whether its commit may have been applied
// (idempotency.ErrOutcomeUnknown): "nothing was stored" is said only where
// nothing can have been.
const (
	unavailableMutation = "Service temporarily unavailable; nothing was stored, retry with the same Idempotency-Key"
	unavailableUnknown  = "Service temporarily unavailable; the change may have been stored: retrying with the same Idempotency-Key is safe"
	unavailableRead     = "Service temporarily unavailable; retry the request"
	internalMutation    = "Internal error; nothing was stored, retry with the same Idempotency-Key"
	internalUnknown     = "Internal error; the change may have been stored: retrying with the same Idempotency-Key is safe"
	internalRead        = "Internal error; retry the request"
)

// answers turns errors into a client's answers, by a table of statuses.
type answers struct{ statuses map[errcode.Code]int }

// Answers words errors as the clients of an API get them, by its table of
// statuses: the one a Runner with the same Options answers with, for the
// requests that do not go through the envelope (an API's reads, its
// router's 404s and 405s), so that every answer of the API has one shape.
type Answers struct{ a answers }

// Answers is the table of these options' statuses, as answers.
func (o Options) Answers() Answers { return Answers{newAnswers(o.Statuses)} }

// Read is err as the client of a read (or of any request that is not a
// mutation) gets it: by its code's status, with the code's sentence where
// err has none ("retry the request"); any error without a code is a 500.
func (a Answers) Read(err error) Response {
	resp, _ := a.a.answer(err, false)
	return resp
}

// Mutation is err as the client of a mutation gets it: as Read, but a
// failure of the service tells the client what may have been stored
// (nothing, or, where err wraps idempotency.ErrOutcomeUnknown, perhaps the
// change) and to retry with the same Idempotency-Key.
func (a Answers) Mutation(err error) Response {
	resp, _ := a.a.answer(err, true)
	return resp
}

func newAnswers(extra map[errcode.Code]int) answers {
	s := DefaultStatuses()
	for code, status := range extra {
		if status == 0 {
			delete(s, code)
		} else {
			s[code] = status
		}
	}
	return answers{statuses: s}
}

// codes is every code the table answers, sorted.
func (a answers) codes() []errcode.Code { return slices.Sorted(maps.Keys(a.statuses)) }

// answerBody is an error's JSON.
type answerBody struct {
	Code    errcode.Code    `json:"error"`
	Message string          `json:"message"`
	Details errcode.Details `json:"details,omitempty"`
}

// answer is err as the client gets it. An *errcode.Error in err's chain is
// answered by its code, with its message, or the code's own sentence where
// it has none; any other error is a 500. A 503 says when to retry.
func (a answers) answer(err error, mutation bool) (Response, *errcode.Error) {
	e, ok := errcode.Of(err)
	if !ok {
		e = errcode.Wrap(errcode.Internal, err)
	}
	status, ok := a.statuses[e.Code]
	if !ok {
		// A code no table has is a bug of the application's: answer it as
		// one, rather than with a status nobody chose.
		e, status = errcode.Wrap(errcode.Internal, err), http.StatusInternalServerError
	}
	body := answerBody{Code: e.Code, Message: e.Message, Details: e.Details}
	if body.Message == "" {
		body.Message = sentence(e.Code, mutation, errors.Is(err, idempotency.ErrOutcomeUnknown))
	}
	b, mErr := json.Marshal(body)
	if mErr != nil { // details are plain values; this cannot happen
		b = []byte(`{"error":"INTERNAL","message":"Internal error"}`)
	}
	resp := jsonResponse(status, b)
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests || e.RetryAfter > 0 {
		resp.Header.Set("Retry-After", strconv.Itoa(retryAfterSeconds(e.RetryAfter)))
	}
	return resp, e
}

// sentence words a code that came with no message.
func sentence(code errcode.Code, mutation, unknown bool) string {
	switch {
	case code == errcode.ServiceUnavailable && mutation && unknown:
		return unavailableUnknown
	case code == errcode.ServiceUnavailable && mutation:
		return unavailableMutation
	case code == errcode.ServiceUnavailable:
		return unavailableRead
	case code == errcode.Internal && mutation && unknown:
		return internalUnknown
	case code == errcode.Internal && mutation:
		return internalMutation
	case code == errcode.Internal:
		return internalRead
	}
	return "The request was refused: " + string(code)
}

// retryAfterSeconds is d in whole seconds, rounded up, at least
// RetryAfterSeconds: Retry-After takes whole seconds, and a client that
// retried early would only be refused again.
func retryAfterSeconds(d time.Duration) int {
	return max(RetryAfterSeconds, int((d+time.Second-1)/time.Second))
}
