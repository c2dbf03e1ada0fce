// Package ddbtest gives the service's integration tests a DynamoDB with
// the service's tables, made from the same definitions the service and the
// template use. The backend is the public test kit's (package dynamotest):
// the embedded in-memory server (kumo) by default, the endpoint
// DYNAMODB_ENDPOINT names otherwise (moto, dynoxide), with its counting,
// fault-injecting transport. The tables have unique names and are removed
// when the test ends.
package ddbtest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/local/embedded"
	"github.com/sync-events/sync-events/internal/ratelimit"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Backend is a DynamoDB endpoint with fresh tables of the service: the
// test kit's backend (package dynamotest), whose client and transport it
// carries, and the tables.
type Backend struct {
	*dynamotest.Backend
	Tables ddb.TableNames
}

// Start returns a backend with fresh, empty tables of the service, removed
// at the end of t: on the embedded server, or the endpoint
// DYNAMODB_ENDPOINT names.
func Start(t testing.TB) *Backend {
	t.Helper()
	kit := dynamotest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	suffix := uuid.NewString()[:8]
	tables := ddb.TableNames{Ledger: "test-ledger-" + suffix, Events: "test-events-" + suffix}
	// Tables made on a client of their own: the test counts its calls
	// and injects its faults on Client's.
	admin := dynamotest.NewClient(kit.Endpoint, nil)
	if err := embedded.EnsureTables(ctx, admin, tables); err != nil {
		t.Fatalf("create tables on %s: %v", kit.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := ddb.DeleteTables(ctx, admin, tables); err != nil {
			t.Errorf("clean up tables on %s: %v", kit.Name, err)
		}
	})
	return &Backend{Backend: kit, Tables: tables}
}

// Ledger is the store of the backend's ledger table.
func (b *Backend) Ledger() *dynamodbstore.Store { return dynamodbstore.New(b.Client, b.Tables.Ledger) }

// StoredEvents is every event in the events table, as stored.
func (b *Backend) StoredEvents(t testing.TB) []syncevent.Event {
	return readAll(t, eventstore.New(b.Client, b.Tables.Events, b.Ledger(), ratelimit.Bucket{}).All)
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
