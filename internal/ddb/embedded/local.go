package embedded

import (
	"context"
	"os"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
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
	srv      *Server
}

// StartLocal starts an embedded server unless endpoint is set, then creates
// the tables there.
func StartLocal(ctx context.Context, endpoint string, tables ddb.TableNames) (*Local, error) {
	l := &Local{Endpoint: endpoint}
	if endpoint == "" {
		srv, err := Start()
		if err != nil {
			return nil, err
		}
		l.Endpoint, l.Embedded, l.srv = srv.URL, true, srv
	}
	client, err := ddb.NewClient(ctx, ddb.ClientOptions{Endpoint: l.Endpoint, LocalCredentials: true})
	if err == nil {
		err = ddb.EnsureTables(ctx, client, tables)
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
