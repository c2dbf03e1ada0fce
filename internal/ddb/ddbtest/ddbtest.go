// Package ddbtest starts the DynamoDB backend integration tests run on and
// creates their tables from the same definitions the service and the
// template use. By default that is the embedded in-memory server (kumo);
// with DYNAMODB_ENDPOINT set, it is that endpoint (DynamoDB Local, moto,
// dynoxide). Either way the tables have unique names and are removed when
// the test ends.
package ddbtest

import (
	"context"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/ddb/embedded"
	"github.com/sync-events/sync-events/internal/eventlog"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// EnvBackendName names the implementation behind DYNAMODB_ENDPOINT ("moto",
// "dynoxide"), so that tests can hold it to its known deviations.
const EnvBackendName = "DYNAMODB_BACKEND"

// Backend is a DynamoDB endpoint with fresh tables.
type Backend struct {
	Client *dynamodb.Client
	Tables ddb.TableNames
	// Transport carries every call of Client; it counts them and injects faults.
	Transport *Transport
	// Endpoint is where the backend listens, for a process outside the test
	// binary (the function under the runtime emulator).
	Endpoint string
	// Name says which backend this is: embedded.Name, $DYNAMODB_BACKEND, or
	// else the endpoint URL.
	Name string
}

var (
	shared     *embedded.Server
	sharedOnce sync.Once
	sharedErr  error
)

// Start returns a backend with fresh, empty tables, removed at the end of t.
func Start(t testing.TB) *Backend {
	t.Helper()
	endpoint, name := os.Getenv(config.EnvEndpoint), os.Getenv(EnvBackendName)
	if name == "" {
		name = endpoint
	}
	if endpoint == "" {
		// One embedded server per test binary, unique tables per test: the
		// same isolation an external endpoint gets.
		sharedOnce.Do(func() { shared, sharedErr = embedded.Start() })
		if sharedErr != nil {
			t.Fatal(sharedErr)
		}
		endpoint, name = shared.URL, embedded.Name
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 128 // the race tests run many requests at once
	tr := NewTransport(base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := ddb.NewClient(ctx, ddb.ClientOptions{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr}, LocalCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	suffix := uuid.NewString()[:8]
	tables := ddb.TableNames{Ledger: "test-ledger-" + suffix, Events: "test-events-" + suffix}
	if err := ddb.EnsureTables(ctx, client, tables); err != nil {
		t.Fatalf("create tables on %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tr.Reset()
		if err := ddb.DeleteTables(ctx, client, tables); err != nil {
			t.Errorf("clean up tables on %s: %v", name, err)
		}
	})
	tr.Reset()
	return &Backend{Client: client, Tables: tables, Transport: tr, Endpoint: endpoint, Name: name}
}

// Ledger is the store of the backend's ledger table.
func (b *Backend) Ledger() *dynamodbstore.Store { return dynamodbstore.New(b.Client, b.Tables.Ledger) }

// StoredEvents is every event in the events table, as stored.
func (b *Backend) StoredEvents(t testing.TB) []syncevent.Event {
	return readAll(t, eventlog.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{}).All)
}

// LedgerRecords is every record in the ledger table, as stored.
func (b *Backend) LedgerRecords(t testing.TB) []idempotency.Record {
	return readAll(t, b.Ledger().All)
}

func readAll[T any](t testing.TB, all func(context.Context) ([]T, error)) []T {
	t.Helper()
	v, err := all(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}
