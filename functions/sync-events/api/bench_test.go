package api_test

import (
	"bytes"
	"context"
	"github.com/sync-events/sync-events/functions/sync-events/api"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/idempotency"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// memoryDynamoDB answers every TransactWriteItems from memory, as DynamoDB
// would for a fresh mutation or, with replay set, for a known key (the old
// item returned with the failed condition), so that a benchmark measures
// the handler and the SDK client, not a database.
type memoryDynamoDB struct {
	replay []byte
}

func (m memoryDynamoDB) RoundTrip(req *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, req.Body) //nolint:errcheck // in-memory
	req.Body.Close()
	status, body := http.StatusOK, []byte(`{}`)
	if m.replay != nil {
		status, body = http.StatusBadRequest, m.replay
	}
	return &http.Response{
		StatusCode: status, Request: req, ContentLength: int64(len(body)),
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:   io.NopCloser(bytes.NewReader(body)),
	}, nil
}

func benchClient(b *testing.B, transport http.RoundTripper) *dynamodb.Client {
	b.Helper()
	client, err := ddb.NewClient(context.Background(), ddb.ClientOptions{
		Endpoint: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: transport}, LocalCredentials: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	return client
}

func benchHandler(b *testing.B, transport http.RoundTripper) *api.Handler {
	b.Helper()
	client := benchClient(b, transport)
	return api.Wire(client, tablesConfig(ddb.TableNames{Ledger: "ledger", Events: "events"}), slog.New(slog.DiscardHandler))
}

// oneKBEvent is a POST of about 1 KB, as API Gateway delivers it.
func oneKBEvent(b *testing.B) (key, body string) {
	b.Helper()
	id := uuid.NewString()
	payload := `{"noteId":"n-1842","title":"Groceries for the week","items":[` +
		strings.Repeat(`{"name":"milk","qty":2,"unit":"l","done":false},`, 16) + `{"name":"eggs","qty":12}],"color":"#ffcc00"}`
	body = `{"id":"` + id + `","type":"note.updated","occurredAt":"2026-12-02T14:03:00.250Z","payload":` + payload + `}`
	if len(body) < 900 || len(body) > 1200 {
		b.Fatalf("body is %d bytes", len(body))
	}
	return uuid.NewString(), body
}

// BenchmarkHandler is the handler's own cost per request, in process.
func BenchmarkHandler(b *testing.B) {
	key, body := oneKBEvent(b)
	req := apiRequest("POST", "alice", key, body)
	b.Run("fresh", func(b *testing.B) {
		h := benchHandler(b, memoryDynamoDB{})
		b.ReportAllocs()
		for b.Loop() {
			if resp, _ := h.Handle(context.Background(), req); resp.StatusCode != 201 {
				b.Fatalf("%d %s", resp.StatusCode, resp.Body)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		canonical, _ := idempotency.Canonicalize([]byte(body))
		hash := idempotency.HashCanonical(canonical)
		stored := `{"id":"x","type":"note.updated","occurredAt":"2026-12-02T14:03:00.250Z","receivedAt":"2026-12-02T14:03:01.000Z"}`
		item := `{"user_id":{"S":"alice"},"key":{"S":"` + key + `"},"payload_hash":{"S":"` + hash + `"},"status_code":{"N":"201"},` +
			`"response_body":{"S":` + quoteJSON(stored) + `},"created_at":{"S":"2026-12-02T14:03:01.000Z"},` +
			`"method":{"S":"POST"},"route":{"S":"` + api.EventsPath + `"},"expires_at":{"N":"1796824981"}}`
		cancelled := `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"Transaction cancelled",` +
			`"CancellationReasons":[{"Code":"ConditionalCheckFailed","Item":` + item + `},{"Code":"None"}]}`
		h := benchHandler(b, memoryDynamoDB{replay: []byte(cancelled)})
		b.ReportAllocs()
		for b.Loop() {
			if resp, _ := h.Handle(context.Background(), req); resp.StatusCode != 201 || resp.Headers["Idempotent-Replayed"] != "true" {
				b.Fatalf("%d %v %s", resp.StatusCode, resp.Headers, resp.Body)
			}
		}
	})
	// The SDK's share: the same transaction as "fresh", committed straight
	// through the store, with nothing of the handler around it.
	b.Run("sdk-commit-only", func(b *testing.B) {
		client := benchClient(b, memoryDynamoDB{})
		store, events := ddb.NewLedger(client, "ledger"), ddb.NewEvents(client, "events")
		canonical, _ := idempotency.Canonicalize([]byte(body))
		ev, err := syncevent.Parse(canonical)
		if err != nil {
			b.Fatal(err)
		}
		ev.UserID, ev.ReceivedAt = "alice", time.Now()
		rec := idempotency.Record{UserID: "alice", Key: key, PayloadHash: idempotency.HashCanonical(canonical), StatusCode: 201,
			ResponseBody: ev.CreatedBody(), Method: "POST", Route: api.EventsPath, CreatedAt: ev.ReceivedAt, ExpiresAt: ev.ReceivedAt.Add(time.Hour)}
		writes := []types.TransactWriteItem{events.PutNew(ev)}
		b.ReportAllocs()
		for b.Loop() {
			if err := store.Commit(context.Background(), rec, writes, ev.ReceivedAt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("refused", func(b *testing.B) {
		h := benchHandler(b, memoryDynamoDB{})
		bad := apiRequest("POST", "alice", "not-a-key", body)
		b.ReportAllocs()
		for b.Loop() {
			if resp, _ := h.Handle(context.Background(), bad); resp.StatusCode != 400 {
				b.Fatalf("%d", resp.StatusCode)
			}
		}
	})
}

func quoteJSON(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
