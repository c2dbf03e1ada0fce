// Command sync-events is the Lambda function behind the sync API: it reads
// its configuration and builds its DynamoDB client once per execution
// environment, then serves API Gateway HTTP API (payload 2.0) events.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/metrics"
)

func main() {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("start-up failed", "error", err.Error())
		os.Exit(1)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// AWS_LAMBDA_FUNCTION_NAME is set by Lambda: the metrics' FunctionName.
	out := api.Output{Log: log, Metrics: metrics.NewWriter(os.Stdout, os.Getenv("AWS_LAMBDA_FUNCTION_NAME"))}
	h, err := api.NewFromConfig(context.Background(), cfg, out)
	if err != nil {
		log.Error("start-up failed", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
