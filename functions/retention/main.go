// Command retention is the Lambda function that removes events older than
// a deployment keeps them: the events table's change feed, filtered to head
// items, invokes it with batches of records, and it trims each stream
// whose head moved (package retention). The template creates it only when
// EventRetentionDays is above 0. A failed batch is retried by Lambda; one
// given up leaves the stream to be trimmed at its next commit.
//
// EVENTS_TABLE is the events table, EVENT_RETENTION_DAYS how many days an
// event stays (at least 1); DYNAMODB_ENDPOINT, for sam local invoke only,
// a local backend.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/retention"
)

// maxRemovedPerStream bounds one stream's deletes in one batch (40
// BatchWriteItems); a stream further behind is trimmed on by its next
// batches.
const maxRemovedPerStream = 1000

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	policy, err := policyFrom(os.Getenv)
	if err != nil {
		log.Error("start-up failed", "error", err.Error())
		os.Exit(1)
	}
	endpoint := os.Getenv(config.EnvEndpoint)
	client, err := ddb.NewClient(context.Background(), ddb.ClientOptions{Endpoint: endpoint, LocalCredentials: endpoint != ""})
	if err != nil {
		log.Error("start-up failed", "error", err.Error())
		os.Exit(1)
	}
	trimmer := eventstore.Table{Client: client, Name: os.Getenv(config.EnvEventsTable)}
	lambda.Start(handler(trimmer, policy, log))
}

// policyFrom reads the policy from the environment.
func policyFrom(getenv func(string) string) (retention.Policy, error) {
	if getenv(config.EnvEventsTable) == "" {
		return retention.Policy{}, fmt.Errorf("%s is not set", config.EnvEventsTable)
	}
	keep, err := config.EventRetention(getenv)
	if err != nil {
		return retention.Policy{}, err
	}
	return retention.Policy{Keep: keep, Limit: maxRemovedPerStream}, nil
}

// handler is the function: one batch in, its streams trimmed, one log line.
func handler(t retention.Trimmer, p retention.Policy, log *slog.Logger) func(context.Context, events.DynamoDBEvent) error {
	return func(ctx context.Context, ev events.DynamoDBEvent) error {
		rep, err := retention.Handle(ctx, t, p, ev, time.Now())
		attrs := []any{"records", rep.Records, "streams", rep.Streams, "trimmed", rep.Trimmed, "removed", rep.Removed, "deferred", rep.Deferred}
		if err != nil {
			log.Error("streams not trimmed; the batch will be retried", append(attrs, "error", err.Error())...)
			return err
		}
		log.Info("streams trimmed", attrs...)
		return nil
	}
}
