package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/mutation"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/metrics"
	"github.com/sync-events/sync-events/internal/ratelimit"
)

// NewFromConfig builds the DynamoDB client from cfg, once per execution
// environment, and wires the handler on it.
func NewFromConfig(ctx context.Context, cfg config.Config, out Output) (*Handler, error) {
	client, err := ddb.NewClient(ctx, ddb.ClientOptions{
		Endpoint: cfg.Endpoint,
		// Local endpoints accept any signature; AWS never sees these.
		LocalCredentials: cfg.Endpoint != "",
	})
	if err != nil {
		return nil, err
	}
	return Wire(client, cfg, out), nil
}

// Output is where the handler reports each request: one log line to Log
// and one metrics line to Metrics (none if nil).
type Output struct {
	Log     *slog.Logger
	Metrics *metrics.Writer
	// Accepted, where the configuration has the busy-space path on
	// (config.Config.SequencedSpaceWrites), is told of the stream of
	// each write accepted, to sequence it: make run and the tests give a
	// eventstore.Worker's Wake. Nil (the Lambda), no one in the process is
	// told: the sequencer function reads the accepts off the table's
	// stream.
	Accepted func(stream string)
}

// envelope is how the API's mutations are put through package mutation,
// and the one table of statuses every answer of the API is worded by
// (Options.Answers for those outside the envelope): the caller is the
// token's sub that the edge put in the context, within what DynamoDB can
// store, and every write of the API names its own conflict
// (EVENT_ALREADY_EXISTS), so CONFLICT is never answered.
var envelope = mutation.Options{
	User:     caller,
	Statuses: statuses(),
}

// statuses are the API's own codes' statuses: its events', the event
// log's, the spaces', and no CONFLICT; no IDEMPOTENCY_KEY_IN_PROGRESS
// either, as no mutation of the API runs a step.
func statuses() map[errcode.Code]int {
	s := map[errcode.Code]int{
		errcode.Conflict:       0,
		errcode.KeyInProgress:  0,
		EventAlreadyExists:     http.StatusConflict,
		CallerIDUnsupported:    http.StatusForbidden,
		eventstore.StorageFull: http.StatusConflict,
	}
	for c, st := range spaceStatuses {
		s[c] = st
	}
	return s
}

// maxReadLimitUsers bounds the users whose reads an environment counts:
// at most about 9 MiB at the longest sub DynamoDB stores (2 KiB).
const maxReadLimitUsers = 4096

// Wire is the one place the handler is put together: the event log (the
// events table, committed with the ledger's records), the exactly-once
// flow over it with its replay cache, and the envelope every mutation goes
// through, on client (its calls counted for the metrics). The Lambda, make
// run and every test use it.
func Wire(client *dynamodb.Client, cfg config.Config, out Output) *Handler {
	client = ddb.WithCallStats(client)
	changes := ratelimit.Bucket{Rate: float64(cfg.ChangesPerSecond), Burst: float64(cfg.ChangesBurst)}
	events := eventstore.New(client, cfg.EventsTable, dynamodbstore.New(client, cfg.IdempotencyTable), changes)
	if cfg.SequencedSpaceWrites {
		events.AcceptWhenContended(out.Accepted) // nil: the stream's consumer sequences
	}
	flow := idempotency.NewFlow(events, idempotency.Options{
		Retention: cfg.LedgerRetention,
		Cache:     idempotency.NewReplayCache(cfg.ReplayCacheBytes),
	})
	opts := envelope
	opts.MaxBodyBytes = cfg.MaxBodyBytes
	reads := ratelimit.NewLimiter(ratelimit.Bucket{Rate: float64(cfg.ReadsPerSecond), Burst: float64(cfg.ReadsBurst)}, maxReadLimitUsers)
	// Refusals are limited while changes are: CHANGES_PER_SECOND=0 turns
	// both off (make contract and make load run so).
	refusals := refusalsBucket
	if cfg.ChangesPerSecond == 0 {
		refusals = ratelimit.Bucket{}
	}
	refused := ratelimit.NewLimiter(refusals, maxReadLimitUsers)
	mux, byPattern := newMux()
	return &Handler{
		mux: mux, byPattern: byPattern, mutations: mutation.New(flow, opts), answers: envelope.Answers(),
		events: events, reads: reads, refused: refused, maxBodyBytes: cfg.MaxBodyBytes, log: out.Log, metrics: out.Metrics,
	}
}
