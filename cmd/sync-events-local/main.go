// Command sync-events-local serves the real sync-events handler over HTTP on
// ADDR (default 127.0.0.1:3000) for local development. Without
// DYNAMODB_ENDPOINT it runs on an embedded in-memory DynamoDB; with it, it
// creates the tables there if missing. A bearer token's claims are decoded
// without checking its signature, standing in for API Gateway's JWT
// authorizer. It answers CORS as API Gateway does with the template's
// configuration: any localhost or 127.0.0.1 origin may call it, and the
// origins listed in CORS_ALLOW_ORIGINS (comma-separated, as the template's
// CorsAllowOrigins parameter). It prints one readable line per request; LOG_FORMAT=json
// prints the Lambda's own JSON log lines and metrics lines instead. None of
// this is in the Lambda binary.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/cors"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/ddb/embedded"
	"github.com/sync-events/sync-events/internal/devserver"
	"github.com/sync-events/sync-events/internal/metrics"
)

func main() {
	log := slog.New(devserver.NewConsoleHandler(os.Stdout, slog.LevelInfo))
	if jsonLogs() {
		log = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	if err := run(log); err != nil {
		log.Error("sync-events-local stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.Load(embedded.Getenv)
	if err != nil {
		return err
	}
	local, err := embedded.StartLocal(ctx, cfg.Endpoint, ddb.TableNames{Ledger: cfg.IdempotencyTable, Events: cfg.EventsTable})
	if err != nil {
		return err
	}
	defer local.Close()
	cfg.Endpoint = local.Endpoint
	backend := "endpoint"
	if local.Embedded {
		backend = "embedded"
	}
	out := api.Output{Log: log}
	if jsonLogs() {
		// The metrics lines the Lambda writes, on the same output as the logs.
		out.Metrics = metrics.NewWriter(os.Stdout, "sync-events-local")
	}
	h, err := api.NewFromConfig(ctx, cfg, out)
	if err != nil {
		return err
	}
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:3000"
	}
	origins := cors.ParseOrigins(os.Getenv("CORS_ALLOW_ORIGINS"))
	handler := cors.API.Wrap(origins, devserver.Handler(h.Handle))
	srv := &http.Server{Addr: addr, Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown) //nolint:errcheck // best effort on the way out
	}()
	log.Info("listening", "addr", "http://"+addr, "backend", backend, "cors_origins", strings.Join(append([]string{"localhost", "127.0.0.1"}, origins.Listed...), ","), "idempotency_table", cfg.IdempotencyTable, "events_table", cfg.EventsTable)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// jsonLogs reports LOG_FORMAT=json: the Lambda's log and metrics lines.
func jsonLogs() bool { return os.Getenv("LOG_FORMAT") == "json" }
