package dynamotest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/sivchari/kumo"

	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
)

// The environment that points the kit at another DynamoDB.
const (
	// EnvEndpoint, if set, is the DynamoDB endpoint tests run on instead
	// of the embedded server ("http://127.0.0.1:8000").
	EnvEndpoint = "DYNAMODB_ENDPOINT"
	// EnvBackend names the implementation at EnvEndpoint ("moto",
	// "dynoxide"), for Backend.Name: tests can hold a backend to its
	// known deviations by it.
	EnvBackend = "DYNAMODB_BACKEND"
)

// Embedded names the embedded server: Backend.Name when no endpoint is
// set. It returns no item with a failed transactional condition
// (ReturnValuesOnConditionCheckFailure is ignored), which package
// dynamodbstore reads in its stead.
const Embedded = "kumo"

// Server is an embedded, in-memory DynamoDB-compatible server on a
// loopback port of its own.
type Server struct {
	// URL is the endpoint to point a client at.
	URL string
	srv *kumo.Server
}

// NewServer starts an embedded server; Close stops it. A test wants Start,
// which shares one server per test binary; a local tool (a dev server)
// starts its own.
func NewServer() *Server {
	srv := kumo.NewServer()
	return &Server{URL: srv.URL, srv: srv}
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// NewClient is a DynamoDB client of endpoint whose calls go through
// httpClient (nil: http.DefaultClient): fixed credentials and region, which
// local backends accept, and the SDK's standard retries (three attempts,
// jittered backoff) without its client-side retry quota, which a test
// that throttles many calls on purpose would run out of.
func NewClient(endpoint string, httpClient *http.Client) *dynamodb.Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(endpoint),
		HTTPClient:   httpClient,
		Retryer:      retry.NewStandard(func(o *retry.StandardOptions) { o.RateLimiter = ratelimit.None }),
	})
}

// Backend is a DynamoDB for one test: a client, the transport that
// carries its calls, and where it listens.
type Backend struct {
	// Client reaches the backend through Transport.
	Client *dynamodb.Client
	// Transport counts Client's calls and injects faults into them.
	Transport *Transport
	// HTTPClient carries Client's calls through Transport: for a client of
	// one's own (other options, the same counts and faults).
	HTTPClient *http.Client
	// Endpoint is where the backend listens, for a process outside the
	// test binary.
	Endpoint string
	// Name is Embedded, $DYNAMODB_BACKEND, or else the endpoint.
	Name string
	// admin makes and deletes tables, around Transport.
	admin *dynamodb.Client
}

var (
	shared     *Server
	sharedOnce sync.Once
)

// Start is a backend for t: the endpoint EnvEndpoint names, or the
// embedded server this test binary shares, with a fresh Transport.
func Start(t testing.TB) *Backend {
	t.Helper()
	endpoint, name := os.Getenv(EnvEndpoint), os.Getenv(EnvBackend)
	if name == "" {
		name = endpoint
	}
	if endpoint == "" {
		sharedOnce.Do(func() { shared = NewServer() })
		endpoint, name = shared.URL, Embedded
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 128 // race tests send many calls at once
	tr := NewTransport(base)
	hc := &http.Client{Transport: tr}
	return &Backend{
		Client: NewClient(endpoint, hc), Transport: tr, HTTPClient: hc, Endpoint: endpoint, Name: name,
		admin: NewClient(endpoint, &http.Client{Transport: base}),
	}
}

// CreateTable makes the table in describes under a name of its own (in's
// name and a random suffix), with ttl's time to live if ttl is set, waits
// until it is active, and deletes it when t ends. It returns the name.
func (b *Backend) CreateTable(t testing.TB, in *dynamodb.CreateTableInput, ttl *dynamodb.UpdateTimeToLiveInput) string {
	t.Helper()
	name := strings.TrimSuffix(aws.ToString(in.TableName), "-") + "-" + uuid.NewString()[:8]
	in, ttl = renamed(in, ttl, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The kit's own calls go around the transport: a test counts its
	// calls, and its faults are for them.
	if err := dynamodbstore.CreateTable(ctx, b.admin, in, ttl); err != nil {
		t.Fatalf("create table %s on %s: %v", name, b.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := b.admin.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var gone *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &gone) { // an SDK retry of a lost answer finds it gone
			t.Errorf("delete table %s on %s: %v", name, b.Name, err)
		}
	})
	return name
}

// LedgerTable makes an idempotency ledger table (dynamodbstore.TableInput
// and TTLInput) as CreateTable does, and returns its name.
func (b *Backend) LedgerTable(t testing.TB) string {
	t.Helper()
	return b.CreateTable(t, dynamodbstore.TableInput("ledger"), dynamodbstore.TTLInput("ledger"))
}

// renamed is in and ttl for a table called name; the caller's are left
// as they were.
func renamed(in *dynamodb.CreateTableInput, ttl *dynamodb.UpdateTimeToLiveInput, name string) (*dynamodb.CreateTableInput, *dynamodb.UpdateTimeToLiveInput) {
	c := *in
	c.TableName = aws.String(name)
	if ttl != nil {
		u := *ttl
		u.TableName = aws.String(name)
		ttl = &u
	}
	return &c, ttl
}
