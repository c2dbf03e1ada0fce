package api

import (
	"cmp"
	"context"
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
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/ddb"
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

// Handler answers the function's API Gateway requests.
type Handler struct {
	mutations *mutation.Runner[eventstore.Change]
	// batches is the envelope of the routes that take a larger body.
	batches      *mutation.Runner[eventstore.Change]
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

// Handle is the Lambda handler. It never returns an error: every failure is
// an answer the client can act on.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, _ error) {
	start := time.Now()
	var out outcome
	ctx, calls := ddb.CountCalls(ctx)
	defer func() {
		if p := recover(); p != nil {
			resp, out = h.fail(fmt.Errorf("panic: %v (%w)\n%s", p, idempotency.ErrOutcomeUnknown, debug.Stack()), req.RequestContext.HTTP.Method)
		}
		out.status = resp.StatusCode
		h.report(ctx, &req, out, time.Since(start), calls())
	}()
	ctx, cancel := withDeadlineMargin(ctx)
	defer cancel()
	resp, out = h.route(ctx, &req)
	return resp, nil
}

// report writes the request's log line and its metrics line.
func (h *Handler) report(ctx context.Context, req *events.APIGatewayV2HTTPRequest, out outcome, took time.Duration, calls ddb.CallStats) {
	requestID, traceID := lambdaRequestID(ctx, req), lambdaTraceID(ctx)
	h.logRequest(ctx, req, out, took, requestID, traceID)
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

// request is an API Gateway request as a read sees it: the event and the
// path parameters its pattern named.
type request struct {
	*events.APIGatewayV2HTTPRequest
	params map[string]string
}

// route finds the request's row of the table and runs it. A path no row
// has is a 404; a method its rows do not take is refused as such (RFC 9110,
// 15.5.6), before anything about the request is looked at.
func (h *Handler) route(ctx context.Context, req *events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, outcome) {
	method := req.RequestContext.HTTP.Method
	rt, params, allow := match(method, RequestPath(req))
	switch {
	case rt == nil && allow == nil:
		return h.fail(errNotFound, method)
	case rt == nil:
		resp, out := h.fail(methodNotAllowed(allow), method)
		resp.Headers["Allow"] = strings.Join(allow, ", ")
		return resp, out
	}
	if rt.read != nil {
		return rt.read(h, ctx, &request{APIGatewayV2HTTPRequest: req, params: params})
	}
	return h.mutate(ctx, req, rt, params)
}

// RequestPath is the path the request was for, without what API Gateway
// put in front of it. A static route that API Gateway matched names the
// path itself, whatever base path or stage came before it. Otherwise (the
// catch-all) it is rawPath, less a leading segment equal to the stage where
// API Gateway adds one: a named stage on the generated execute-api domain.
// A custom domain adds no stage, so a first segment that happens to equal
// the stage's name stays.
func RequestPath(req *events.APIGatewayV2HTTPRequest) string {
	if _, route, ok := strings.Cut(req.RouteKey, " "); ok && !strings.Contains(route, "{") {
		return route
	}
	p := req.RawPath
	if p == "" {
		p = req.RequestContext.HTTP.Path
	}
	stage := req.RequestContext.Stage
	if stage == "" || stage == "$default" || !strings.Contains(req.RequestContext.DomainName, ".execute-api.") {
		return p
	}
	if rest, ok := strings.CutPrefix(p, "/"+stage); ok && (rest == "" || rest[0] == '/') {
		return cmp.Or(rest, "/") // the stage itself is its root
	}
	return p
}

// mutate runs a mutation's row through the envelope: the route's pattern
// is what the key's record names, its path parameters are the pattern's,
// its body limit the row's.
func (h *Handler) mutate(ctx context.Context, req *events.APIGatewayV2HTTPRequest, rt *route, params map[string]string) (_ events.APIGatewayV2HTTPResponse, out outcome) {
	r := mutation.FromHTTPAPI(req)
	r.Route, r.PathParams = rt.pattern, params
	runner := h.mutations
	if rt.maxBody > 0 {
		runner = h.batches
	}
	caller, inSpace := spaceMutationCaller(r, params)
	if inSpace {
		if wait := h.refused.Wait(caller, time.Now()); wait > 0 {
			return h.fail(limited(errRefusalsLimited, wait), req.RequestContext.HTTP.Method)
		}
		defer func() {
			if c := out.Code; c == eventstore.ErrNotMember.Code || c == eventstore.ErrRoleForbids.Code {
				h.refused.Take(caller, time.Now())
			}
		}()
	}
	var carried int
	resp, rep := runner.Run(ctx, r, func(_ context.Context, r *mutation.Request) (mutation.Plan[eventstore.Change], error) {
		plan, n, err := rt.mutate(h, r)
		carried = n
		return plan, err
	})
	return resp.HTTPAPI(), outcome{Report: rep, result: string(rep.Outcome), events: carried}
}

// fail answers err as package mutation words every answer of the API: a
// refusal when the request itself cannot be served (4xx), an error when
// the service is at fault (5xx), which is logged with its cause.
func (h *Handler) fail(err error, method string) (events.APIGatewayV2HTTPResponse, outcome) {
	resp := h.mutations.AnswerRead(err)
	if h.mutations.NeedsKey(method) {
		resp = h.mutations.AnswerMutation(err)
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
	return resp.HTTPAPI(), out
}

// logRequest writes the request's one log line. It carries no body, no
// token, no user id and only the first 8 characters of the key: enough to
// correlate a client's retries, not enough to replay them.
func (h *Handler) logRequest(ctx context.Context, req *events.APIGatewayV2HTTPRequest, out outcome, took time.Duration, requestID, traceID string) {
	attrs := []slog.Attr{
		slog.String("request_id", requestID),
		slog.String("trace_id", traceID),
		slog.String("method", req.RequestContext.HTTP.Method),
		slog.String("path", loggedPath(req)),
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

// loggedPath is the request's path for the log, cut to maxLoggedPath bytes.
func loggedPath(req *events.APIGatewayV2HTTPRequest) string {
	p := RequestPath(req)
	// A member's route names a user in its path: logged as its pattern,
	// with the space's id, never the member's.
	if params, ok := matchPattern(SpaceMemberPath, p); ok {
		return strings.Replace(SpaceMemberPath, "{spaceId}", params["spaceId"], 1)
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

func lambdaRequestID(ctx context.Context, req *events.APIGatewayV2HTTPRequest) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return lc.AwsRequestID
	}
	return req.RequestContext.RequestID
}

// lambdaTraceID is the X-Ray trace id of the invocation (the Root field of
// the trace header the runtime passes), joining the log line and the
// metrics line to the trace; "" where there is no trace (local runs).
func lambdaTraceID(ctx context.Context) string {
	header, _ := ctx.Value("x-amzn-trace-id").(string) // aws-lambda-go's key
	for field := range strings.SplitSeq(header, ";") {
		if root, ok := strings.CutPrefix(field, "Root="); ok {
			return root
		}
	}
	return ""
}
