// Command effects is the notes API's second Lambda function: the outbox,
// fed by the ledger table's stream (see template.yaml). For each record
// inserted it reads the record and delivers its pending effects (the
// note.created webhook of package notes), recording each outcome on the
// record; records it could not read or settle are reported as batch item
// failures, for the event source mapping to retry and, past its retries,
// to send to the dead-letter queue.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/outbox"
)

// The environment the template sets.
const (
	envLedgerTable = "IDEMPOTENCY_TABLE"
	envWebhook     = "NOTES_WEBHOOK_URL"
)

// attempts is how many tries an effect gets before it is marked failed.
const attempts = 3

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	ledger := os.Getenv(envLedgerTable)
	if ledger == "" {
		log.Error("start-up failed", "error", envLedgerTable+" must be set")
		os.Exit(1)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("start-up failed", "error", err.Error())
		os.Exit(1)
	}
	// With no URL set the API declares no effects; one declared before the
	// URL was removed fails, with that reason on its record.
	box := outbox.New(dynamodbstore.New(dynamodb.NewFromConfig(cfg), ledger), map[string]outbox.Deliverer{
		notes.WebhookKind: logged(log, notes.Webhook(os.Getenv(envWebhook))),
	}, outbox.Options{Attempts: attempts})
	lambda.Start(func(ctx context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp, err := box.Stream(ctx, e)
		if n := len(resp.BatchItemFailures); n > 0 {
			log.Error("ledger failed: records left to the stream's retry", "records", len(e.Records), "batch_item_failures", n)
		}
		return resp, err
	})
}

// logged is deliver, with a line for each failed attempt: the effect's
// name, the attempt, the first 8 characters of its derived key (what the
// receiver dedupes on) and the failure, which names no URL. No payload or
// user id.
func logged(log *slog.Logger, deliver outbox.Deliverer) outbox.Deliverer {
	return func(ctx context.Context, d outbox.Delivery) error {
		err := deliver(ctx, d)
		if err != nil {
			level, msg := slog.LevelWarn, "effect attempt failed"
			if d.Attempt >= attempts {
				level, msg = slog.LevelError, "effect failed: no attempts left"
			}
			log.LogAttrs(ctx, level, msg, slog.String("effect", d.Name), slog.Int("attempt", d.Attempt),
				slog.String("key_prefix", d.Key[:8]), slog.String("error", err.Error()))
		}
		return err
	}
}
