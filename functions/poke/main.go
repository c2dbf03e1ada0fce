// Command poke is the Lambda function behind live sync: the events
// table's stream, filtered to head items, invokes it with batches of
// records, and it publishes one poke per user whose head moved on that
// user's channel of the AppSync Events API (package poke). A failed
// publish fails the batch, which Lambda retries; the template bounds the
// retries and a record's age, so that a shard never stalls behind a
// poke, and a poke never sent costs a device latency, not an event: its
// next poke, or its periodic pull, brings everything.
//
// LIVE_HTTP_DOMAIN is the Event API's HTTP DNS name; the region and the
// credentials are Lambda's, from the environment (package awsenv).
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sync-events/sync-events/internal/awsenv"
	"github.com/sync-events/sync-events/internal/poke"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	domain := os.Getenv("LIVE_HTTP_DOMAIN")
	if domain == "" {
		log.Error("start-up failed", "error", "LIVE_HTTP_DOMAIN is not set")
		os.Exit(1)
	}
	cfg, err := awsenv.Config(false)
	if err != nil {
		log.Error("start-up failed", "error", err.Error())
		os.Exit(1)
	}
	pub := &poke.AppSync{
		Endpoint:    "https://" + domain + "/event",
		Region:      cfg.Region,
		Credentials: cfg.Credentials,
		// 2 s a publish: a batch of 100 users is 7 rounds of 16, 14 s at
		// worst, under the function's 30 s timeout.
		Client: &http.Client{Timeout: 2 * time.Second},
	}
	lambda.Start(handler(pub, log))
}

// handler is the function: one batch in, its pokes out, one log line.
func handler(pub poke.Publisher, log *slog.Logger) func(context.Context, events.DynamoDBEvent) error {
	return func(ctx context.Context, ev events.DynamoDBEvent) error {
		rep, err := poke.Handle(ctx, pub, ev)
		attrs := []any{"records", rep.Records, "heads", rep.Heads, "published", rep.Published, "no_channel", rep.NoChannel}
		if err != nil {
			log.Error("pokes not sent; the batch will be retried", append(attrs, "error", err.Error())...)
			return err
		}
		log.Info("pokes sent", attrs...)
		return nil
	}
}
