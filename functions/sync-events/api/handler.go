package api

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/idempotency"
	"github.com/sync-events/sync-events/internal/metrics"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// EventsPath is the one resource of the API.
const EventsPath = "/api/v1/sync/events"

// Page sizes of GET.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)

// deadlineMargin is the time kept back from the Lambda deadline so that a
// slow DynamoDB call is cut off in time to answer a retryable 503, instead of
// the function being killed and the client getting a gateway error.
const deadlineMargin = 500 * time.Millisecond

// EventStore is what the handler needs of the events table.
type EventStore interface {
	PutNew(ev syncevent.Event) types.TransactWriteItem
	// After yields userID's events in receive order from after, reading
	// batch at a time, until the caller stops.
	After(ctx context.Context, userID string, after syncevent.Position, batch int) iter.Seq2[syncevent.Event, error]
}

// Handler answers the function's API Gateway requests.
type Handler struct {
	ledger       *idempotency.Flow
	events       EventStore
	maxBodyBytes int
	log          *slog.Logger
	metrics      *metrics.Writer
}

// outcome is what a request came to, for the log line.
type outcome struct {
	status int
	result string // one of metrics.Outcomes
	code   string // the API error code answered, if any
	key    string
	err    error
	// fromCache: the answer came from the replay cache, with no DynamoDB call.
	fromCache bool
	// conflictRetries: transactions retried after a conflict.
	conflictRetries int
}

// Handle is the Lambda handler. It never returns an error: every failure is
// an answer the client can act on.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, _ error) {
	start := time.Now()
	var out outcome
	ctx, calls := ddb.CountCalls(ctx)
	defer func() {
		if p := recover(); p != nil {
			out = outcome{result: "error", code: CodeInternal, key: out.key, err: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
			resp = errorResponse(errInternal.forMethod(req.RequestContext.HTTP.Method))
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
		Outcome: out.result, ErrorCode: out.code, RequestID: requestID, TraceID: traceID, Latency: took,
		Calls: calls.Calls, Retries: calls.Retries(), Throttles: calls.Throttles, CallLatency: calls.Latency,
		ConflictRetries: out.conflictRetries,
	})
}

func withDeadlineMargin(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, d.Add(-deadlineMargin))
	}
	return context.WithCancel(ctx)
}

func (h *Handler) route(ctx context.Context, req *events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, outcome) {
	if requestPath(req) != EventsPath {
		return rejected(errNotFound)
	}
	switch req.RequestContext.HTTP.Method {
	case http.MethodGet:
		return h.list(ctx, req)
	case http.MethodPost:
	default:
		// A method the resource does not take is refused as such (RFC 9110,
		// 15.5.6), before anything about the request is looked at.
		return rejected(methodNotAllowed(allowedMethods))
	}
	// Every mutation needs a caller and a key.
	user, apiErr := userID(req)
	if apiErr != nil {
		return rejected(apiErr)
	}
	key, apiErr := idempotencyKey(req)
	if apiErr != nil {
		return rejected(apiErr)
	}
	return h.post(ctx, req, user, key)
}

const allowedMethods = "GET, POST"

// isMutation reports a method that changes state: its failures are worded
// for a retry with the same key.
func isMutation(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// Routes lists, as "METHOD path", what the handler answers with anything
// but a refusal. The OpenAPI document must describe exactly these.
func Routes() []string {
	return []string{http.MethodGet + " " + EventsPath, http.MethodPost + " " + EventsPath}
}

// requestPath is the path the request was for, without what API Gateway
// put in front of it. A static route that API Gateway matched names the
// path itself, whatever base path or stage came before it. Otherwise (the
// catch-all) it is rawPath, less a leading segment equal to the stage where
// API Gateway adds one: a named stage on the generated execute-api domain.
// A custom domain adds no stage, so a first segment that happens to equal
// the stage's name stays.
func requestPath(req *events.APIGatewayV2HTTPRequest) string {
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
		return rest
	}
	return p
}

func (h *Handler) post(ctx context.Context, req *events.APIGatewayV2HTTPRequest, user, key string) (events.APIGatewayV2HTTPResponse, outcome) {
	ev, canonical, apiErr := h.parseEvent(req)
	if apiErr != nil {
		r, o := rejected(apiErr)
		o.key = key
		return r, o
	}
	ev.UserID = user
	mreq := idempotency.Request{UserID: user, Key: key, Method: http.MethodPost, Route: EventsPath, CanonicalBody: canonical}
	res, err := h.ledger.Do(ctx, mreq, h.storeEvent(ev))
	if err != nil {
		r, o := failed(err, key, req)
		if res.Outcome == idempotency.ConflictExhausted {
			o.result = string(res.Outcome)
		}
		o.conflictRetries = res.ConflictRetries
		return r, o
	}
	out := outcome{result: string(res.Outcome), key: key, fromCache: res.FromCache, conflictRetries: res.ConflictRetries}
	switch res.Outcome {
	case idempotency.KeyReused:
		out.code = CodeKeyReused
		return errorResponse(errKeyReused), out
	case idempotency.WriteRejected: // the one write: the event's id is taken
		out.code = CodeEventAlreadyExists
		return errorResponse(errEventExists), out
	}
	resp := jsonResponse(res.StatusCode, res.Body)
	if res.Replayed() {
		resp.Headers["Idempotent-Replayed"] = "true"
	}
	return resp, out
}

func (h *Handler) parseEvent(req *events.APIGatewayV2HTTPRequest) (syncevent.Event, []byte, *Error) {
	if e := checkContentType(req); e != nil {
		return syncevent.Event{}, nil, e
	}
	b, e := body(req, h.maxBodyBytes)
	if e != nil {
		return syncevent.Event{}, nil, e
	}
	canonical, e := canonicalBody(b)
	if e != nil {
		return syncevent.Event{}, nil, e
	}
	// The event is read from the body as sent: the canonical form is only
	// for the hash, and storing it would change the client's numbers.
	ev, err := syncevent.Parse(b)
	if err != nil {
		var ve *syncevent.ValidationError
		if errors.As(err, &ve) {
			return syncevent.Event{}, nil, validation("Invalid event: "+ve.Error(), ve.Fields)
		}
		return syncevent.Event{}, nil, validation("Invalid event: "+err.Error(), nil)
	}
	return ev, canonical, nil
}

// storeEvent is the executor of POST: the event, stamped with the time the
// server received it, and its write, which must be its id's first.
func (h *Handler) storeEvent(ev syncevent.Event) idempotency.Executor {
	return func(_ context.Context, now time.Time) (idempotency.Execution, error) {
		ev.ReceivedAt = now.Truncate(time.Millisecond)
		return idempotency.Execution{
			Response: idempotency.Response{StatusCode: http.StatusCreated, Body: ev.CreatedBody()},
			Writes:   []types.TransactWriteItem{h.events.PutNew(ev)},
		}, nil
	}
}

func (h *Handler) list(ctx context.Context, req *events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, outcome) {
	user, apiErr := userID(req)
	if apiErr != nil {
		return rejected(apiErr)
	}
	limit, after, apiErr := pageParams(req.QueryStringParameters)
	if apiErr != nil {
		return rejected(apiErr)
	}
	p := newPage(limit, MaxPageResponseBytes)
	more := false
	// One more than the page holds is read, so that the last page is
	// known to be last.
	for ev, err := range h.events.After(ctx, user, after, limit+1) {
		if err != nil {
			return failed(err, "", req)
		}
		added, err := p.add(ev)
		if err != nil {
			return failed(err, "", req)
		}
		if !added {
			more = true
			break
		}
	}
	return jsonResponse(http.StatusOK, p.finish(more)), outcome{result: "read"}
}

var badCursor = validation("cursor is not a cursor this API returned", map[string]string{"field": "cursor"})

func pageParams(q map[string]string) (limit int, after syncevent.Position, _ *Error) {
	limit = DefaultPageSize
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, after, validation(fmt.Sprintf("limit must be a whole number from 1 to %d", MaxPageSize), map[string]string{"field": "limit"})
		}
		limit = n
	}
	if v, ok := q["cursor"]; ok {
		pos, err := syncevent.ParseCursor(v)
		if err != nil {
			return 0, after, badCursor
		}
		after = pos
	}
	return limit, after, nil
}

// rejected refuses the request as sent: nothing was tried.
func rejected(e *Error) (events.APIGatewayV2HTTPResponse, outcome) {
	return errorResponse(e), outcome{result: "refused", code: e.Code}
}

// failed answers a request that failed after its input was accepted: an
// error if the service is at fault (5xx), a refusal if the mutation itself
// cannot be stored (too large for a transaction, the user's storage full).
func failed(err error, key string, req *events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, outcome) {
	e := failureAnswer(err, req.RequestContext.HTTP.Method)
	result := "refused"
	if e.Status >= http.StatusInternalServerError {
		result = "error"
	}
	return errorResponse(e), outcome{result: result, code: e.Code, key: key, err: err}
}

func errorResponse(e *Error) events.APIGatewayV2HTTPResponse {
	r := jsonResponse(e.Status, e.body())
	if e.header[0] != "" {
		r.Headers[e.header[0]] = e.header[1]
	}
	return r
}

func jsonResponse(status int, body []byte) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(body),
	}
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
	if out.key != "" {
		attrs = append(attrs, slog.String("key_prefix", out.key[:8]))
	}
	if out.code != "" {
		attrs = append(attrs, slog.String("error_code", out.code))
	}
	if out.fromCache {
		attrs = append(attrs, slog.Bool("from_cache", true))
	}
	level := slog.LevelInfo
	if out.err != nil {
		attrs = append(attrs, slog.String("error", loggableError(out.err)))
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
	p := requestPath(req)
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
