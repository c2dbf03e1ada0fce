package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/edge"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// The API's own error codes, next to package errcode's (and the event
// log's, StorageFull and the spaces').
const (
	// EventAlreadyExists: an event with the request's id is stored already.
	EventAlreadyExists errcode.Code = "EVENT_ALREADY_EXISTS"
	// CallerIDUnsupported: the token's sub is not a user id the service
	// can store.
	CallerIDUnsupported errcode.Code = "CALLER_ID_UNSUPPORTED"
)

// The API's own refusals; every other answer is worded by package mutation
// (the envelope's refusals, and failures by their code) or by the package
// that refused (syncevent, eventstore, idempotency).
var (
	errNotFound            = errcode.New(errcode.NotFound, "No such route")
	errCallerIDUnsupported = errcode.New(CallerIDUnsupported,
		fmt.Sprintf("The token's sub claim is not a user id this service can store (at most %d bytes of UTF-8, not beginning with %q)", dynamodbstore.MaxPartitionKeyBytes, "space#"))
)

func methodNotAllowed(methods []string) *errcode.Error {
	return errcode.New(errcode.MethodNotAllowed, "Method not allowed on this route; allowed: "+strings.Join(methods, ", "))
}

// user is the verified caller: the sub claim that the edge put in the
// request's context (edge.Caller), from the JWT authorizer's claims.
// Nothing the client sends can set it. Both tables are partitioned by it,
// so a sub that DynamoDB could not store as a partition key (over 2048
// bytes, or not UTF-8) is refused before anything is sent, rather than
// failing as a 500 in the middle.
func user(ctx context.Context) (string, error) {
	sub := edge.Caller(ctx)
	if strings.TrimSpace(sub) == "" {
		return "", mutation.ErrUnauthorized
	}
	if len(sub) > dynamodbstore.MaxPartitionKeyBytes || !utf8.ValidString(sub) || eventstore.IsSpaceStream(sub) {
		return "", errCallerIDUnsupported
	}
	return sub, nil
}

// caller is the envelope's User: the caller of the request it was made
// from (mutation.FromHTTP keeps the *http.Request in Event).
func caller(r *mutation.Request) (string, error) {
	hr, ok := r.Event.(*http.Request)
	if !ok {
		return "", mutation.ErrUnauthorized
	}
	return user(hr.Context())
}

// Codes is every error code the API answers with, sorted: the OpenAPI
// document's ErrorCode enum must list exactly these.
func Codes() []string {
	var out []string
	for _, c := range envelope.Codes() {
		out = append(out, string(c))
	}
	return out
}

// Status is the HTTP status code answers with, and false for a code the API
// does not have.
func Status(code string) (int, bool) { return envelope.Status(errcode.Code(code)) }
