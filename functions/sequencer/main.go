// Command sequencer is the Lambda function that places a busy space's accepted
// events (eventstore.Table.HandleAccepted): the events table's change feed,
// filtered to accepted events' inserts (eventstore.AcceptedRecordFilter),
// invokes it with batches of records, and it drains each stream named, giving
// every pending event its position and moving the head past them; that head
// change is what the poke function then pokes on. A failed batch fails whole
// and Lambda delivers it again; what a batch given up after its retries left
// pending is placed by the stream's next accept (whose drain takes every
// pending event), by a removal, which drains first, or by the sweep: a schedule
// invokes the function every minute, and it drains each stream with an event
// accepted over eventstore.SweepAfter ago still pending.
//
// EVENTS_TABLE is the events table; DYNAMODB_ENDPOINT, for sam local invoke
// only, a local backend.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/eventstore"
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
func table(ctx context.Context, getenv func(string) string) (eventstore.Table, error) {
	name := getenv(config.EnvEventsTable)
	if name == "" {
		return eventstore.Table{}, fmt.Errorf("%s is not set", config.EnvEventsTable)
	}
	endpoint := getenv(config.EnvEndpoint)
	client, err := ddb.NewClient(ctx, ddb.ClientOptions{Endpoint: endpoint, LocalCredentials: endpoint != ""})
	if err != nil {
		return eventstore.Table{}, err
	}
	return eventstore.Table{Client: client, Name: name}, nil
}

// handler is the function: a batch of the table's change-feed records in,
// their streams drained, or the schedule's event in, the table swept;
// one log line of counts (never a stream, which names a space or a user).
func handler(t eventstore.Table, log *slog.Logger) func(context.Context, json.RawMessage) error {
	return func(ctx context.Context, payload json.RawMessage) error {
		var ev struct {
			Source  string                       `json:"source"`
			Records []events.DynamoDBEventRecord `json:"Records"`
		}
		if err := json.Unmarshal(payload, &ev); err != nil {
			log.Error("not an event the function takes", "error", err.Error())
			return err
		}
		if ev.Source == scheduleSource {
			rep, err := t.Sweep(ctx, now().Add(-eventstore.SweepAfter))
			return logged(log, "swept", "index_entries", rep, err)
		}
		rep, err := t.HandleAccepted(ctx, events.DynamoDBEvent{Records: ev.Records})
		return logged(log, "streams sequenced", "records", rep, err)
	}
}

// now is the sweep's clock (a test's to move).
var now = time.Now

// scheduleSource is the source of the events EventBridge's schedules send.
const scheduleSource = "aws.events"

// logged logs rep, its Records under the name read (records, or index
// entries), and err, and returns err: the batch is then retried, or the
// sweep runs again at its next minute.
func logged(log *slog.Logger, done, read string, rep eventstore.SequenceReport, err error) error {
	attrs := []any{read, rep.Records, "streams", rep.Streams, "placed", rep.Placed, "failed", rep.Failed}
	if err != nil {
		log.Error("streams not sequenced", append(attrs, "what", done, "error", err.Error())...)
		return err
	}
	log.Info(done, attrs...)
	return nil
}
