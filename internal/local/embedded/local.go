package embedded

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// localTables are the table names local tools use when the environment
// names none.
var localTables = map[string]string{
	config.EnvIdempotencyTable: "sync-events-idempotency",
	config.EnvEventsTable:      "sync-events-events",
}

// Getenv is os.Getenv with the local table names as defaults.
func Getenv(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return localTables[name]
}

// Local is the backend of a local tool (make run, make invoke): the given
// endpoint, or an embedded server when there is none, with the tables
// created if missing.
type Local struct {
	Endpoint string
	Embedded bool
	srv      *dynamotest.Server
}

// StartLocal starts an embedded server unless endpoint is set, then creates
// the tables there.
func StartLocal(ctx context.Context, endpoint string, tables ddb.TableNames) (*Local, error) {
	l := &Local{Endpoint: endpoint}
	if endpoint == "" {
		srv := dynamotest.NewServer()
		l.Endpoint, l.Embedded, l.srv = srv.URL, true, srv
	}
	client, err := ddb.NewClient(ctx, ddb.ClientOptions{Endpoint: l.Endpoint, LocalCredentials: true})
	if err == nil {
		err = EnsureTables(ctx, client, tables)
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Close stops the embedded server, if there is one.
func (l *Local) Close() {
	if l.srv != nil {
		l.srv.Close()
	}
}

// EnsureTables creates the service's tables that do not exist yet, from
// the one definition of each (dynamodbstore's ledger, eventstore's events),
// waits for them to be active and turns on the ledger's TTL. It is for
// local and test backends; in AWS the template creates the tables.
func EnsureTables(ctx context.Context, client *dynamodb.Client, names ddb.TableNames) error {
	if err := dynamodbstore.CreateTable(ctx, client, dynamodbstore.TableInput(names.Ledger), dynamodbstore.TTLInput(names.Ledger)); err != nil {
		return err
	}
	return dynamodbstore.CreateTable(ctx, client, eventstore.TableInput(names.Events), nil)
}
