package api

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/idempotency"
	"github.com/sync-events/sync-events/internal/metrics"
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
}

// Wire is the one place the handler is put together: the event log (the
// events and ledger tables, committed together), the exactly-once flow
// over it with its replay cache, on client (its calls counted for the
// metrics). The Lambda, make run and every test use it.
func Wire(client *dynamodb.Client, cfg config.Config, out Output) *Handler {
	client = ddb.WithCallStats(client)
	events := ddb.NewEvents(client, cfg.EventsTable)
	log := ddb.NewEventLog(ddb.NewLedger(client, cfg.IdempotencyTable), events)
	flow := idempotency.NewFlow(log, cfg.Retention)
	flow.UseReplayCache(idempotency.NewReplayCache(cfg.ReplayCacheBytes))
	return &Handler{flow: flow, events: events, maxBodyBytes: cfg.MaxBodyBytes, log: out.Log, metrics: out.Metrics}
}
