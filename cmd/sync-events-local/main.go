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
//
// Since it accepts any token, it keeps to the machine and to local data:
// it refuses an ADDR that is not loopback unless ALLOW_NON_LOOPBACK=1,
// answers 421 to a request addressed to another host (DNS rebinding),
// refuses a DYNAMODB_ENDPOINT in AWS, and drops AWS credentials from its
// environment, so that it signs every request with fixed local ones.
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
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/local/devserver"
	"github.com/sync-events/sync-events/internal/local/embedded"
	"github.com/sync-events/sync-events/internal/local/localevents"
	"github.com/sync-events/sync-events/internal/metrics"
)

func main() {
	log := slog.New(devserver.NewConsoleHandler(os.Stdout, slog.LevelInfo))
	if jsonLogs() {
		log = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("sync-events-local stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:3000"
	}
	allow, err := devserver.AllowNonLoopback(os.Getenv(devserver.EnvAllowNonLoopback))
	if err != nil {
		return err
	}
	if err := devserver.CheckListenAddr(addr, allow); err != nil {
		return err
	}
	// Before any client is built: they read credentials from the environment.
	dropped, err := devserver.DropAWSCredentials()
	if err != nil {
		return err
	}
	if dropped {
		log.Info("AWS credentials in the environment are not used: the dev server signs with fixed local ones")
	}
	cfg, err := config.Load(embedded.Getenv)
	if err != nil {
		return err
	}
	if err := devserver.CheckEndpoint(cfg.Endpoint); err != nil {
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
	client, err := ddb.NewClient(ctx, ddb.ClientOptions{Endpoint: cfg.Endpoint, LocalCredentials: true})
	if err != nil {
		return err
	}
	// The busy-space path's sequencer, in the process, on the handler's
	// client: a backend may write no change-feed records for transactions
	// (kumo), and make run runs no sequencer function.
	worker := eventstore.NewWorker(eventstore.Table{Client: client, Name: cfg.EventsTable}, log)
	defer worker.Close()
	out.Accepted = worker.Wake
	h := api.Wire(client, cfg, out)
	origins := cors.ParseOrigins(os.Getenv("CORS_ALLOW_ORIGINS"))
	lv, err := startLive(ctx, log, addr, local.Endpoint, local.Embedded, cfg.EventsTable, origins)
	if err != nil {
		return err
	}
	if lv.commits != nil {
		// Pokes from the answers: an accepted write's answer comes before
		// its event is placed, so its stream is noted again once it is.
		worker.OnPlaced(lv.commits.Note)
	}
	srv := &http.Server{Addr: addr, Handler: serving(addr, origins, lv.noteCommits(devserver.Handler(h)), lv.events), ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(lv.events.Close)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown) //nolint:errcheck // best effort on the way out
	}()
	log.Info("listening", "addr", "http://"+addr, "backend", backend, "cors_origins", strings.Join(append([]string{"localhost", "127.0.0.1"}, origins.Listed...), ","), "idempotency_table", cfg.IdempotencyTable, "events_table", cfg.EventsTable,
		"live", "ws://"+addr+localevents.RealtimePath, "live_source", lv.source)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serving is what the server answers with: the host check first (a request
// for another host gets nothing else), then the live channel's two paths,
// then CORS and the API.
func serving(addr string, origins cors.Origins, api, live http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(localevents.RealtimePath, live)
	mux.Handle(localevents.PublishPath, live)
	mux.Handle("/", cors.API.Wrap(origins, api))
	return devserver.HostGuard(addr, mux)
}

// jsonLogs reports LOG_FORMAT=json: the Lambda's log and metrics lines.
func jsonLogs() bool { return os.Getenv("LOG_FORMAT") == "json" }
