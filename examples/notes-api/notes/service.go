// Package notes is a notes API built on the repository's public packages
// only: POST /notes, PATCH /notes/{id} and DELETE /notes/{id} each run
// exactly once under their Idempotency-Key, the note's write and the key's
// ledger record committed in one TransactWriteItems (package
// dynamodbstore), through the envelope of package mutation.
//
// Notes belong to the caller, the verified token's sub: the notes table is
// partitioned by it, so no request can name another user's note.
package notes

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

// Config is what a Service needs. Build one Service per execution
// environment and share it: its replay cache answers retries from memory.
type Config struct {
	Client *dynamodb.Client
	// NotesTable is the table of notes (see TableInput); LedgerTable the
	// idempotency ledger (see dynamodbstore.TableInput).
	NotesTable, LedgerTable string
	// CacheBytes bounds the replay cache; 0 turns it off.
	CacheBytes int
	// Retention is how long a key answers retries; 0 is
	// idempotency.DefaultRetention.
	Retention time.Duration
	// Log gets one line per request; nil logs nothing.
	Log *slog.Logger
	// Webhook gives each POST /notes an effect: the note, POSTed after the
	// commit to the webhook by the deliverer Webhook (see NoteCreated).
	Webhook bool
	// Committed is idempotency.Options.Committed: where no stream of the
	// ledger table delivers the effects (a test, a local server), an
	// outbox.Outbox's Committed delivers them in the process.
	Committed func(context.Context, idempotency.Record)
}

// Service answers the notes API's requests.
type Service struct {
	notes   string
	webhook bool
	runner  *dynamodbstore.Runner
	routes  map[string]dynamodbstore.Mutation
	log     *slog.Logger
}

// New returns the Service of c.
func New(c Config) *Service {
	s := &Service{notes: c.NotesTable, webhook: c.Webhook, log: c.Log}
	s.runner = dynamodbstore.NewRunner(c.Client, c.LedgerTable, idempotency.Options{
		Retention: c.Retention,
		Cache:     idempotency.NewReplayCache(c.CacheBytes),
		Committed: c.Committed,
	}, mutation.Options{
		Statuses: statuses,
		Report:   s.report,
	})
	s.routes = s.routeTable()
	return s
}

// Handle is the Lambda handler of the API's routes (HTTP API, payload
// 2.0). It never returns an error: every failure is an answer.
func (s *Service) Handle(ctx context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	mut, ok := s.routes[e.RouteKey]
	if !ok {
		return s.runner.AnswerRead(errNoRoute).HTTPAPI(), nil
	}
	resp, _ := s.runner.Run(ctx, mutation.FromHTTPAPI(&e), mut)
	return resp.HTTPAPI(), nil
}

// routeTable is the API's mutations by API Gateway route key ("METHOD
// /path"); the template routes exactly these to the function.
func (s *Service) routeTable() map[string]dynamodbstore.Mutation {
	return map[string]dynamodbstore.Mutation{
		"POST /notes":        s.createNote,
		"PATCH /notes/{id}":  s.patchNote,
		"DELETE /notes/{id}": s.deleteNote,
	}
}

// Routes lists the API's route keys, for the template's test.
func Routes() []string { return slices.Sorted(maps.Keys((&Service{}).routeTable())) }

var errNoRoute = errcode.New(errcode.NotFound, "No such route")

// report writes the request's log line: no body, token, user id or whole
// key, only what the request came to.
func (s *Service) report(ctx context.Context, r *mutation.Request, rep mutation.Report) {
	if s.log == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method), slog.String("route", r.Route),
		slog.String("outcome", string(rep.Outcome)), slog.String("key_prefix", rep.KeyPrefix),
		slog.Bool("from_cache", rep.FromCache), slog.Int("conflict_retries", rep.ConflictRetries),
	}
	if rep.Code != "" {
		attrs = append(attrs, slog.String("code", string(rep.Code)))
	}
	level := slog.LevelInfo
	// A cause is logged for the service's own failures only (from DynamoDB
	// or the SDK): a refusal's cause can quote the body.
	if rep.Err != nil && (rep.Code == errcode.ServiceUnavailable || rep.Code == errcode.Internal) {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", rep.Err.Error()))
	}
	s.log.LogAttrs(ctx, level, "request", attrs...)
}
