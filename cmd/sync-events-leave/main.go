// Command sync-events-leave takes one user out of every space they are in,
// as they could themselves: in each space their listing names, it deletes
// every event they wrote there (each keeps its position as a tombstone,
// its payload and author erased, as DELETE …/events/{id} does), then
// removes their membership (DELETE …/members/{sub}); each space is first
// drained of accepted events not yet placed, so that theirs are listed
// and deleted too. Every change goes
// through the API's own handler, on the tables the environment names, so
// it commits exactly as the API commits it: under a key, with the role
// check in the same transaction, and a notice to the other members.
//
// It is the first step of erasing a user (docs/operations.md, "Erasing
// one user"); scripts/erase-user.sh, which erases their own partition,
// is the second. A space whose last owner they are is left as it is and
// reported (add another owner first), as is an event their role no longer
// lets them delete (an owner deletes it); it then exits 1.
//
//	IDEMPOTENCY_TABLE=… EVENTS_TABLE=… sync-events-leave '<the user sub>'
//
// AWS credentials and region come from the environment, as for the AWS
// CLI; DYNAMODB_ENDPOINT points it at a local backend instead. It prints
// one line per space (its id and what was done), never the sub.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// drainer is the Drain of spaces in t.
func drainer(t eventstore.Table) Drain {
	return func(ctx context.Context, spaceID string) error {
		_, err := t.Drain(ctx, eventstore.SpaceStream(spaceID))
		return err
	}
}

func main() {
	if len(os.Args) != 2 || os.Args[1] == "" {
		fmt.Fprintln(os.Stderr, "usage: sync-events-leave <sub>   (IDEMPOTENCY_TABLE and EVENTS_TABLE set)")
		os.Exit(2)
	}
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sync-events-leave:", err)
		os.Exit(1)
	}
	// The handler's own request log is not this command's output.
	quiet := api.Output{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	client, err := ddb.NewClient(ctx, ddb.ClientOptions{Endpoint: cfg.Endpoint, LocalCredentials: cfg.Endpoint != ""})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sync-events-leave:", err)
		os.Exit(1)
	}
	left, err := leaveAll(ctx, api.Wire(client, cfg, quiet), drainer(eventstore.Table{Client: client, Name: cfg.EventsTable}), os.Args[1], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sync-events-leave:", err)
		os.Exit(1)
	}
	if !left {
		os.Exit(1)
	}
}
