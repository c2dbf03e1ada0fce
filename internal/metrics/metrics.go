// Package metrics writes the service's CloudWatch metrics: one line in
// Embedded Metric Format per request, on the function's standard output,
// which CloudWatch Logs turns into metrics with no API call and no agent.
// It owns the metric names, units, namespace and dimensions, which the
// template's alarms and dashboard read; it does not decide what a request
// came to (the API does) or count DynamoDB calls (internal/ddb does).
//
// No Go EMF library is maintained by AWS (it keeps Node, Python, Java and
// .NET ones), and the community ones carry more than this needs, so the
// line is written by log/slog's JSON handler, stripped of its own fields.
package metrics

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/sync-events/sync-events/idempotency"
)

// Namespace is the CloudWatch namespace of every metric here.
const Namespace = "SyncEvents"

// Dimension names. Their values are a closed set: the function's name, an
// Outcome, an API error code. Never a user id or a key.
const (
	DimFunction = "FunctionName"
	DimOutcome  = "Outcome"
	DimCode     = "ErrorCode"
)

// Metric is a metric's name and its CloudWatch unit.
type Metric struct{ Name, Unit string }

// The metrics of a request line.
var (
	Requests          = Metric{"Requests", "Count"}
	Latency           = Metric{"Latency", "Milliseconds"}
	DynamoDBCalls     = Metric{"DynamoDBCalls", "Count"}
	DynamoDBLatency   = Metric{"DynamoDBLatency", "Milliseconds"}
	DynamoDBRetries   = Metric{"DynamoDBRetries", "Count"}
	DynamoDBThrottles = Metric{"DynamoDBThrottles", "Count"}
	ConflictRetries   = Metric{"TransactionConflictRetries", "Count"}
	// Events is the events a mutation read from its body: 1 for a single
	// POST, the batch's size for a batch. A retry answered from the replay
	// cache reads no body, and counts none.
	Events = Metric{"Events", "Count"}
)

// All is every metric a request line carries.
var All = []Metric{Requests, Latency, DynamoDBCalls, DynamoDBLatency, DynamoDBRetries, DynamoDBThrottles, ConflictRetries, Events}

// The outcomes of a request that the idempotency flow does not name.
const (
	OutcomeRefused = "refused" // the request as sent was refused (by error code)
	OutcomeError   = "error"   // the service failed
	OutcomeRead    = "read"    // a page was read
)

// Outcomes are the values of the Outcome dimension: the idempotency flow's
// outcomes but in_progress (no mutation of the API runs a step), then the
// handler's own.
var Outcomes = append(outcomeNames(idempotency.Outcomes), OutcomeRefused, OutcomeError, OutcomeRead)

func outcomeNames(os []idempotency.Outcome) []string {
	names := make([]string, 0, len(os))
	for _, o := range os {
		if o != idempotency.InProgress {
			names = append(names, string(o))
		}
	}
	return names
}

// Request is what one request came to and cost.
type Request struct {
	Outcome   string
	ErrorCode string // the API's error code, or ""
	RequestID string
	TraceID   string
	Latency   time.Duration
	// DynamoDB: operations called, attempts beyond the first, time in
	// attempts, attempts refused for load; and transactions retried after
	// a conflict.
	Calls, Retries, Throttles int
	CallLatency               time.Duration
	ConflictRetries           int
	// Events the mutation read from the body (0 for a read, a refusal
	// before the body was read, or a retry answered from the replay cache).
	Events int
}

// Writer writes request lines to one output.
type Writer struct {
	log      *slog.Logger
	function string
}

// NewWriter writes lines to w with function as the FunctionName dimension.
func NewWriter(w io.Writer, function string) *Writer {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
			return slog.Attr{} // EMF wants only its own fields; slog's are dropped
		}
		return a
	}})
	return &Writer{log: slog.New(h), function: function}
}

type directive struct {
	Namespace  string     `json:"Namespace"`
	Dimensions [][]string `json:"Dimensions"`
	Metrics    []metricDefinition
}

type metricDefinition struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Write writes r's line. A nil Writer writes nothing.
func (w *Writer) Write(r Request) {
	if w == nil {
		return
	}
	defs := make([]metricDefinition, len(All))
	for i, m := range All {
		defs[i] = metricDefinition(m)
	}
	directives := []directive{{Namespace: Namespace, Dimensions: [][]string{{DimFunction, DimOutcome}}, Metrics: defs}}
	if r.ErrorCode != "" {
		// Only Requests by error code: each dimension combination is a
		// custom metric billed monthly, and counts are what codes need.
		directives = append(directives, directive{Namespace: Namespace, Dimensions: [][]string{{DimFunction, DimOutcome, DimCode}},
			Metrics: []metricDefinition{metricDefinition(Requests)}})
	}
	attrs := []slog.Attr{
		slog.Any("_aws", metadata{Timestamp: time.Now().UnixMilli(), CloudWatchMetrics: directives}),
		slog.String(DimFunction, w.function),
		slog.String(DimOutcome, r.Outcome),
	}
	if r.ErrorCode != "" {
		attrs = append(attrs, slog.String(DimCode, r.ErrorCode))
	}
	attrs = append(attrs,
		slog.Int(Requests.Name, 1),
		slog.Float64(Latency.Name, milliseconds(r.Latency)),
		slog.Int(DynamoDBCalls.Name, r.Calls),
		slog.Float64(DynamoDBLatency.Name, milliseconds(r.CallLatency)),
		slog.Int(DynamoDBRetries.Name, r.Retries),
		slog.Int(DynamoDBThrottles.Name, r.Throttles),
		slog.Int(ConflictRetries.Name, r.ConflictRetries),
		slog.Int(Events.Name, r.Events),
		// Not metrics: what joins the line to the request's log line and trace.
		slog.String("request_id", r.RequestID),
	)
	if r.TraceID != "" {
		attrs = append(attrs, slog.String("trace_id", r.TraceID))
	}
	w.log.LogAttrs(context.Background(), slog.LevelInfo, "", attrs...)
}

func milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
