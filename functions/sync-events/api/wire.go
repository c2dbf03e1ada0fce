package api

import (
	"context"
	"log/slog"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/idempotency"
)

// NewFromConfig wires the handler from cfg: the DynamoDB client (opts may
// replace its HTTP client), the ledger and the events table.
func NewFromConfig(ctx context.Context, cfg config.Config, opts ddb.ClientOptions, log *slog.Logger) (*Handler, error) {
	opts.Endpoint = cfg.Endpoint
	// Local endpoints accept any signature; AWS never sees these.
	opts.LocalCredentials = cfg.Endpoint != ""
	client, err := ddb.NewClient(ctx, opts)
	if err != nil {
		return nil, err
	}
	ledger := idempotency.NewLedger(ddb.NewStore(client, cfg.IdempotencyTable), cfg.Retention)
	return New(ledger, ddb.NewEvents(client, cfg.EventsTable), cfg.MaxBodyBytes, log), nil
}
