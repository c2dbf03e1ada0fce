// Command sequencer is the Lambda function that places a busy space's
// accepted events (package sequencer): the events table's stream,
// filtered to accepted events' inserts (sequencer.Filter), invokes it with
// batches of records, and it drains each stream named, giving every
// pending event its position and moving the head past them; that head
// change is what the poke function then pokes on. A failed batch fails
// whole and Lambda delivers it again; a batch given up after its retries
// leaves its events pending, placed by the stream's next accept (whose
// drain takes every pending event) or by a removal, which drains first.
//
// EVENTS_TABLE is the events table; DYNAMODB_ENDPOINT, for sam local
// invoke only, a local backend.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/eventtable"
	"github.com/sync-events/sync-events/internal/sequencer"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	t, err := table(context.Background(), os.Getenv)
	if err != nil {
		log.Error("start-up failed", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(handler(t, log))
}

// table is the events table the environment names, on a client built
// once per execution environment.
func table(ctx context.Context, getenv func(string) string) (eventtable.Table, error) {
	name := getenv(config.EnvEventsTable)
	if name == "" {
		return eventtable.Table{}, fmt.Errorf("%s is not set", config.EnvEventsTable)
	}
	endpoint := getenv(config.EnvEndpoint)
	client, err := ddb.NewClient(ctx, ddb.ClientOptions{Endpoint: endpoint, LocalCredentials: endpoint != ""})
	if err != nil {
		return eventtable.Table{}, err
	}
	return eventtable.Table{Client: client, Name: name}, nil
}

// handler is the function: one batch in, its streams drained, one log
// line of counts (never a stream, which names a space or a user).
func handler(t eventtable.Table, log *slog.Logger) func(context.Context, events.DynamoDBEvent) error {
	return func(ctx context.Context, ev events.DynamoDBEvent) error {
		rep, err := sequencer.Handle(ctx, t, ev)
		attrs := []any{"records", rep.Records, "streams", rep.Streams, "placed", rep.Placed, "failed", rep.Failed}
		if err != nil {
			log.Error("streams not sequenced; the batch will be retried", append(attrs, "error", err.Error())...)
			return err
		}
		log.Info("streams sequenced", attrs...)
		return nil
	}
}
