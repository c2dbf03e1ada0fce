package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/ratelimit"
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
	return benchHandlerCache(b, transport, config.DefaultReplayCacheBytes)
}

func benchHandlerCache(b *testing.B, transport http.RoundTripper, cacheBytes int) *api.Handler {
	b.Helper()
	client := benchClient(b, transport)
	cfg := apitest.TablesConfig(ddb.TableNames{Ledger: "ledger", Events: "events"})
	cfg.ReplayCacheBytes = cacheBytes
	return api.Wire(client, cfg, api.Output{Log: slog.New(slog.DiscardHandler)})
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
	req := apitest.Request("POST", "alice", key, body)
	// The in-memory transport commits every transaction, so with no replay
	// cache every request of the loop is fresh.
	b.Run("fresh", func(b *testing.B) {
		h := benchHandlerCache(b, memoryDynamoDB{}, 0)
		b.ReportAllocs()
		for b.Loop() {
			if resp, _ := h.Handle(context.Background(), req); resp.StatusCode != 201 {
				b.Fatalf("%d %s", resp.StatusCode, resp.Body)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		h := benchHandlerCache(b, memoryDynamoDB{replay: cancelledWithItem(key, body)}, 0)
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
		log := eventstore.New(client, "events", dynamodbstore.New(client, "ledger"), ratelimit.Bucket{})
		canonical, _ := idempotency.Canonicalize([]byte(body))
		ev, err := syncevent.Parse(canonical)
		if err != nil {
			b.Fatal(err)
		}
		ev.Stream, ev.ReceivedAt = "alice", time.Now()
		rec := idempotency.Record{UserID: "alice", Key: key, PayloadHash: idempotency.HashCanonical(canonical), StatusCode: 201,
			ResponseBody: ev.CreatedBody(), Method: "POST", Route: api.EventsPath, CreatedAt: ev.ReceivedAt, ExpiresAt: ev.ReceivedAt.Add(time.Hour)}
		evs := []syncevent.Event{ev}
		b.ReportAllocs()
		for b.Loop() {
			if err := log.Commit(context.Background(), rec, []eventstore.Change{eventstore.Append(evs...)}, ev.ReceivedAt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay-from-memory", func(b *testing.B) {
		h := benchHandler(b, memoryDynamoDB{})
		h.Handle(context.Background(), req) //nolint:errcheck // the first answer, committed and cached
		b.ReportAllocs()
		for b.Loop() {
			if resp, _ := h.Handle(context.Background(), req); resp.StatusCode != 201 || resp.Headers["Idempotent-Replayed"] != "true" {
				b.Fatalf("%d %v %s", resp.StatusCode, resp.Headers, resp.Body)
			}
		}
	})
	b.Run("refused", func(b *testing.B) {
		h := benchHandler(b, memoryDynamoDB{})
		bad := apitest.Request("POST", "alice", "not-a-key", body)
		b.ReportAllocs()
		for b.Loop() {
			if resp, _ := h.Handle(context.Background(), bad); resp.StatusCode != 400 {
				b.Fatalf("%d", resp.StatusCode)
			}
		}
	})
}

// cancelledWithItem is DynamoDB's answer to a known key's transaction: the
// ledger condition failed, with the stored record (ALL_OLD) for body.
func cancelledWithItem(key, body string) []byte {
	canonical, _ := idempotency.Canonicalize([]byte(body))
	hash := idempotency.HashCanonical(canonical)
	stored := `{"id":"x","type":"note.updated","occurredAt":"2026-12-02T14:03:00.250Z","receivedAt":"2026-12-02T14:03:01.000Z"}`
	expires := strconv.FormatInt(time.Now().Add(24*time.Hour).Unix(), 10)
	item := `{"user_id":{"S":"alice"},"key":{"S":"` + key + `"},"payload_hash":{"S":"` + hash + `"},"status_code":{"N":"201"},` +
		`"response_body":{"S":` + quoteJSON(stored) + `},"created_at":{"S":"2026-12-02T14:03:01.000Z"},` +
		`"method":{"S":"POST"},"route":{"S":"` + api.EventsPath + `"},"expires_at":{"N":"` + expires + `"}}`
	return []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"Transaction cancelled",` +
		`"CancellationReasons":[{"Code":"ConditionalCheckFailed","Item":` + item + `},{"Code":"None"}]}`)
}

// delayed adds a fixed delay to every call, standing in for the network
// and DynamoDB's own time: a request's latency is then its round trips.
type delayed struct {
	http.RoundTripper
	delay time.Duration
}

func (d delayed) RoundTrip(req *http.Request) (*http.Response, error) {
	time.Sleep(d.delay)
	return d.RoundTripper.RoundTrip(req)
}

// callDelay is a round trip to DynamoDB from Lambda in the same region, as
// an order of magnitude (single-digit milliseconds).
const callDelay = 4 * time.Millisecond

// BenchmarkRoundTrips is each way of answering a POST on a transport that
// adds callDelay per DynamoDB call, beside the three calls of a
// record-then-complete flow (Powertools: a conditional PutItem of an
// "in progress" record, the business write, an UpdateItem to complete it)
// made by the same client. ns/op divided by callDelay is the round trips.
func BenchmarkRoundTrips(b *testing.B) {
	key, body := oneKBEvent(b)
	req := apitest.Request("POST", "alice", key, body)
	post := func(b *testing.B, h *api.Handler, replayed bool) {
		b.Helper()
		for b.Loop() {
			resp, _ := h.Handle(context.Background(), req)
			if resp.StatusCode != 201 || (resp.Headers["Idempotent-Replayed"] == "true") != replayed {
				b.Fatalf("%d %v %s", resp.StatusCode, resp.Headers, resp.Body)
			}
		}
	}
	b.Run("fresh=1", func(b *testing.B) {
		post(b, benchHandlerCache(b, delayed{memoryDynamoDB{}, callDelay}, 0), false)
	})
	b.Run("replay-from-dynamodb=1", func(b *testing.B) {
		post(b, benchHandlerCache(b, delayed{memoryDynamoDB{replay: cancelledWithItem(key, body)}, callDelay}, 0), true)
	})
	b.Run("replay-from-memory=0", func(b *testing.B) {
		h := benchHandler(b, delayed{memoryDynamoDB{}, callDelay})
		if resp, _ := h.Handle(context.Background(), req); resp.StatusCode != 201 {
			b.Fatalf("first: %d %s", resp.StatusCode, resp.Body)
		}
		post(b, h, true)
	})
	b.Run("record-then-complete=3", func(b *testing.B) {
		client := benchClient(b, delayed{memoryDynamoDB{}, callDelay})
		item := map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: "alice"}, "key": &types.AttributeValueMemberS{Value: key}}
		for b.Loop() {
			ctx := context.Background()
			_, err1 := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("ledger"), Item: item, ConditionExpression: aws.String("attribute_not_exists(#k)"), ExpressionAttributeNames: map[string]string{"#k": "key"}})
			_, err2 := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("events"), Item: item})
			_, err3 := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("ledger"), Key: item, UpdateExpression: aws.String("SET #s = :c"),
				ExpressionAttributeNames: map[string]string{"#s": "status"}, ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: "COMPLETED"}}})
			if err := errors.Join(err1, err2, err3); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func quoteJSON(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
