// Command sync-events-import-d1 moves the idempotency ledger of the
// Workers + D1 service this one replaces into this service's ledger
// table, so that a device's retry of a key the original answered before
// the cut-over is replayed after it, not executed a second time
// (docs/operations.md, "Cut-over from the Workers + D1 service"; package
// internal/d1import says what a row becomes).
//
//	wrangler d1 export <db> --remote --table idempotency_ledger --output ledger.sql
//	IDEMPOTENCY_TABLE=… sync-events-import-d1 [flags] ledger.sql
//
// The export is the .sql file wrangler writes or a SQLite database file.
// Flags: -table (default $IDEMPOTENCY_TABLE), -route and -method of the
// mutation the ledger answered (default POST /api/v1/sync/events),
// -retention (how long after its created_at a record answers retries;
// default $IDEMPOTENCY_RETENTION, else 168h), -user-map
// (a CSV of old id,new sub; rows of ids it lacks are refused), -dry-run
// (check and count, write nothing), -workers (writes in flight, default
// 16).
//
// AWS credentials and region come from the environment, as for the AWS
// CLI's exported credentials; DYNAMODB_ENDPOINT points it at a local
// backend instead. It prints a progress line to stderr every two seconds
// and the counts at the end to stdout: rows imported, already present
// (left as they were), expired (skipped), and refused, each refused row
// by its key's first 8 characters and the reason; never a user id, a
// whole key or a body. It exits 0 when every row was imported, present or
// expired; 3 when some were refused (the rest imported); 1 on a failure
// (what was written stays: running it again is safe); 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/d1import"
	"github.com/sync-events/sync-events/internal/ddb"
)

const name = "sync-events-import-d1"

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitRefused = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the command, its environment given: what the tests call.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	table := fs.String("table", getenv(config.EnvIdempotencyTable), "the ledger table (default $"+config.EnvIdempotencyTable+")")
	route := fs.String("route", d1import.DefaultRoute, "the route of the mutation the original's ledger answered, as this service records it")
	method := fs.String("method", d1import.DefaultMethod, "the method of that mutation")
	defaultRetention := idempotency.DefaultRetention
	if d, err := time.ParseDuration(getenv(config.EnvRetention)); err == nil && d > 0 {
		defaultRetention = d
	}
	retention := fs.Duration("retention", defaultRetention, "how long after its created_at a record answers retries ($"+config.EnvRetention+" if set)")
	userMap := fs.String("user-map", "", "a CSV file of old user id,new user id (the new identity provider's sub), no header; rows of ids it lacks are refused")
	dryRun := fs.Bool("dry-run", false, "check and count every row, write nothing (no DynamoDB call)")
	workers := fs.Int("workers", 16, "writes in flight at once")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [flags] EXPORT   (EXPORT: wrangler d1 export's .sql file, or a SQLite database file)\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return exitOK
	} else if err != nil {
		return exitUsage
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s: %s\n", name, fmt.Sprintf(format, a...))
		fs.Usage()
		return exitUsage
	}
	switch {
	case fs.NArg() != 1:
		return usage("one export file, please")
	case *table == "" && !*dryRun:
		return usage("no table: -table or $%s", config.EnvIdempotencyTable)
	case !strings.HasPrefix(*route, "/"):
		return usage("-route %q does not start with /", *route)
	case !isMutationMethod(*method):
		return usage("-method %q is not POST, PUT, PATCH or DELETE", *method)
	case *retention <= 0:
		return usage("-retention must be positive")
	case *workers <= 0:
		return usage("-workers must be positive")
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitFailed
	}
	opts := d1import.Options{Route: *route, Method: *method, Retention: *retention, DryRun: *dryRun, Workers: *workers,
		Progress: func(c d1import.Counts) { fmt.Fprintln(stderr, progressLine(c, *dryRun)) }}
	if *userMap != "" {
		f, err := os.Open(*userMap)
		if err != nil {
			return fail(err)
		}
		opts.UserMap, err = d1import.ReadUserMap(f)
		f.Close()
		if err != nil {
			return fail(err)
		}
	}
	src, err := d1import.Open(ctx, fs.Arg(0))
	if err != nil {
		return fail(err)
	}
	defer src.Close()
	var store d1import.Inserter = noStore{}
	if !*dryRun {
		endpoint := getenv(config.EnvEndpoint)
		client, err := ddb.NewClient(ctx, ddb.ClientOptions{Endpoint: endpoint, LocalCredentials: endpoint != ""})
		if err != nil {
			return fail(err)
		}
		store = dynamodbstore.New(client, *table)
	}
	c, err := d1import.Import(ctx, src, store, opts)
	summary(stdout, c, *dryRun)
	switch {
	case err != nil:
		return fail(err)
	case len(c.Refused) > 0:
		return exitRefused
	}
	return exitOK
}

func isMutationMethod(m string) bool {
	switch m {
	case "POST", "PUT", "PATCH", "DELETE":
		return true
	}
	return false
}

// noStore is a dry run's: Import never calls it.
type noStore struct{}

func (noStore) Insert(context.Context, idempotency.Record) (bool, error) {
	panic("a dry run wrote")
}

func progressLine(c d1import.Counts, dryRun bool) string {
	imported := "imported"
	if dryRun {
		imported = "to import"
	}
	rate := 0.0
	if s := c.Elapsed.Seconds(); s > 0 {
		rate = float64(c.Imported+c.Present) / s
	}
	return fmt.Sprintf("%s: %d/%d rows read, %d %s, %d already present, %d expired, %d refused, %d retries, %.0f rows/s written",
		name, c.Read, c.Rows, c.Imported, imported, c.Present, c.Expired, len(c.Refused), c.Retries, rate)
}

func summary(w io.Writer, c d1import.Counts, dryRun bool) {
	imported := "imported"
	if dryRun {
		imported = "would import (dry run: nothing written, presence not checked)"
	}
	fmt.Fprintf(w, "rows %d\n%s %d\nalready present %d\nexpired %d\nrefused %d\n", c.Rows, imported, c.Imported, c.Present, c.Expired, len(c.Refused))
	for _, r := range c.Refused {
		fmt.Fprintf(w, "  refused %s…: %s\n", r.KeyPrefix, r.Reason)
	}
	fmt.Fprintf(w, "elapsed %s\n", c.Elapsed.Round(time.Millisecond))
}
