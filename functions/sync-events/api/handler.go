package api

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/edge"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/metrics"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// deadlineMargin is the time kept back from the Lambda deadline so that a
// slow DynamoDB call is cut off in time to answer a retryable 503, instead of
// the function being killed and the client getting a gateway error.
const deadlineMargin = 500 * time.Millisecond

// EventReader is what the handler reads of the events table.
type EventReader interface {
	// Read yields userID's events in commit order from after, reading
	// batch at a time, until the caller stops or the next event is not
	// visible yet.
	Read(ctx context.Context, userID string, after syncevent.Position, batch int) iter.Seq2[syncevent.Event, error]
	// Stored returns those of ids that userID has stored, reading with
	// strong consistency.
	Stored(ctx context.Context, userID string, ids []string) ([]string, error)
	// Role is user's role in the space of stream; found is false when
	// they are not a member.
	Role(ctx context.Context, stream, user string) (role string, found bool, _ error)
	// Spaces lists user's spaces with their role.
	Spaces(ctx context.Context, user string) ([]eventstore.SpaceListing, error)
}

// Handler is the API: an http.Handler, served by the Lambda through
// package edge (Handle) and by make run directly.
type Handler struct {
	// mux matches a request's path and method to one of routes, by
	// pattern ("POST /api/v1/sync/events").
	mux       *http.ServeMux
	byPattern map[string]*route
	// mutations is the one envelope of every mutation; a route's body
	// limit goes with each of its requests.
	mutations *mutation.Runner[eventstore.Change]
	// answers words every answer that is not a mutation's own: reads,
	// 404, 405 and failures outside the envelope; by the envelope's table.
	answers      mutation.Answers
	events       EventReader
	reads        *ratelimit.Limiter
	refused      *ratelimit.Limiter
	maxBodyBytes int
	log          *slog.Logger
	metrics      *metrics.Writer
}

// outcome is what a request came to, for the log line: the envelope's
// report of a mutation (a read's code, key prefix and error in the same
// fields), with the answer's status, the metrics' outcome and the events
// the mutation carried.
type outcome struct {
	mutation.Report
	status int
	result string // one of metrics.Outcomes
	events int
}

// Handle is the Lambda handler: API Gateway's event, converted once at the
// edge into an *http.Request and served by ServeHTTP. It never returns an
// error: every failure is an answer the client can act on.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return edge.Serve(ctx, h, &req), nil
}

// ServeHTTP answers one request of the API, with its caller in the
// context (edge.WithCaller), and writes its log line and metrics line.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var resp mutation.Response
	var out outcome
	ctx, calls := ddb.CountCalls(r.Context())
	defer func() {
		if p := recover(); p != nil {
			resp, out = h.fail(fmt.Errorf("panic: %v (%w)\n%s", p, idempotency.ErrOutcomeUnknown, debug.Stack()), r.Method)
		}
		out.status = resp.StatusCode
		h.report(ctx, r, out, time.Since(start), calls())
		resp.Write(w)
	}()
	deadline, cancel := withDeadlineMargin(ctx)
	defer cancel()
	resp, out = h.route(r.WithContext(deadline))
}

// report writes the request's log line and its metrics line.
func (h *Handler) report(ctx context.Context, r *http.Request, out outcome, took time.Duration, calls ddb.CallStats) {
	requestID, traceID := edge.RequestID(ctx), edge.TraceID(ctx)
	h.logRequest(ctx, r, out, took, requestID, traceID)
	h.metrics.Write(metrics.Request{
		Outcome: out.result, ErrorCode: string(out.Code), RequestID: requestID, TraceID: traceID, Latency: took,
		Calls: calls.Calls, Retries: calls.Retries(), Throttles: calls.Throttles, CallLatency: calls.Latency,
		ConflictRetries: out.ConflictRetries, Events: out.events,
	})
}

func withDeadlineMargin(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, d.Add(-deadlineMargin))
	}
	return context.WithCancel(ctx)
}

// RequestPath is the path an API Gateway event was for: edge.RequestPath,
// the one reading by which the handler routes and the contract check holds
// exchanges to the OpenAPI document.
func RequestPath(req *events.APIGatewayV2HTTPRequest) string { return edge.RequestPath(req) }

// mutate runs a mutation's route through the envelope: the route's pattern
// is what the key's record names, its path parameters are the pattern's,
// its body limit the route's.
func (h *Handler) mutate(r *http.Request, rt *route) (_ mutation.Response, out outcome) {
	mr, err := h.mutationRequest(r, rt)
	if err != nil {
		return h.fail(err, r.Method)
	}
	caller, inSpace := spaceMutationCaller(r)
	if inSpace {
		if wait := h.refused.Wait(caller, time.Now()); wait > 0 {
			return h.fail(limited(errRefusalsLimited, wait), r.Method)
		}
		defer func() {
			if c := out.Code; c == eventstore.ErrNotMember.Code || c == eventstore.ErrRoleForbids.Code {
				h.refused.Take(caller, time.Now())
			}
		}()
	}
	var carried int
	resp, rep := h.mutations.Run(r.Context(), mr, func(_ context.Context, mr *mutation.Request) (mutation.Plan[eventstore.Change], error) {
		plan, n, err := rt.mutate(h, mr)
		carried = n
		return plan, err
	})
	return resp, outcome{Report: rep, result: string(rep.Outcome), events: carried}
}

// mutationRequest is r as the envelope takes it, with the route's body
// limit. A body API Gateway sent as base64 text is read as far as the
// limit's base64 length, for the envelope to decode and measure.
func (h *Handler) mutationRequest(r *http.Request, rt *route) (*mutation.Request, error) {
	limit := cmp.Or(rt.maxBody, h.maxBodyBytes)
	base64Body := edge.Base64Body(r.Context())
	read := limit
	if base64Body {
		read = base64.StdEncoding.EncodedLen(limit)
	}
	mr, err := mutation.FromHTTP(r, read)
	if err != nil {
		return nil, err
	}
	mr.BodyBase64, mr.MaxBodyBytes = base64Body, limit
	return mr, nil
}

// fail answers err as every answer of the API is worded: a refusal when
// the request itself cannot be served (4xx), an error when the service is
// at fault (5xx), which is logged with its cause.
func (h *Handler) fail(err error, method string) (mutation.Response, outcome) {
	resp := h.answers.Read(err)
	if h.mutations.NeedsKey(method) {
		resp = h.answers.Mutation(err)
	}
	out := outcome{result: metrics.OutcomeRefused, Report: mutation.Report{Code: errcode.CodeOf(err)}}
	if resp.StatusCode >= http.StatusInternalServerError {
		out.result = metrics.OutcomeError
		if out.Code == "" {
			out.Code = errcode.Internal
		}
	}
	if e, _ := errcode.Of(err); resp.StatusCode >= http.StatusInternalServerError || e == nil || e.Err != nil {
		out.Err = err
	}
	return resp, out
}

// logRequest writes the request's one log line. It carries no body, no
// token, no user id and only the first 8 characters of the key: enough to
// correlate a client's retries, not enough to replay them.
func (h *Handler) logRequest(ctx context.Context, r *http.Request, out outcome, took time.Duration, requestID, traceID string) {
	attrs := []slog.Attr{
		slog.String("request_id", requestID),
		slog.String("trace_id", traceID),
		slog.String("method", r.Method),
		slog.String("path", loggedPath(apiPath(r))),
		slog.Int("status", out.status),
		slog.String("idempotency_outcome", out.result),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
	}
	if out.KeyPrefix != "" {
		attrs = append(attrs, slog.String("key_prefix", out.KeyPrefix))
	}
	if out.Code != "" {
		attrs = append(attrs, slog.String("error_code", string(out.Code)))
	}
	if out.FromCache {
		attrs = append(attrs, slog.Bool("from_cache", true))
	}
	level := slog.LevelInfo
	if out.Err != nil {
		attrs = append(attrs, slog.String("error", loggableError(out.Err)))
		level = slog.LevelError
		if out.status == http.StatusServiceUnavailable {
			level = slog.LevelWarn
		}
	}
	h.log.LogAttrs(ctx, level, "request", attrs...)
}

// maxLoggedPath bounds the path in a log line: a path is the client's text,
// and a refused one can be anything.
const maxLoggedPath = 128

// loggedPath is the request's path p for the log, cut to maxLoggedPath
// bytes.
func loggedPath(p string) string {
	// A member's route names a user in its path: logged as its pattern,
	// with the space's id, never the member's.
	if space, ok := memberPathSpace(p); ok {
		return strings.Replace(SpaceMemberPath, "{spaceId}", space, 1)
	}
	if len(p) <= maxLoggedPath {
		return p
	}
	cut := maxLoggedPath
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return p[:cut] + "..."
}

// loggableError is err's text, unless err comes from encoding or decoding
// JSON: such errors quote JSON pointers built from member names, and
// values, of the client's data, so only the fact is logged.
func loggableError(err error) string {
	var semantic *json.SemanticError
	var syntactic *jsontext.SyntacticError
	if errors.As(err, &semantic) || errors.As(err, &syntactic) {
		return "JSON encoding or decoding failed (detail withheld: it can quote the payload)"
	}
	return err.Error()
}
