package dynamodbstore_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

// committed answers every call as DynamoDB answers a committed
// transaction, from memory, so that a benchmark measures the code and the
// SDK client, not a database or a network.
type committed struct{}

func (committed) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	_ = req.Body.Close()
	return &http.Response{
		StatusCode: http.StatusOK, Request: req, ContentLength: 2,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:   io.NopCloser(bytes.NewReader([]byte(`{}`))),
	}, nil
}

func benchClient(b *testing.B) *dynamodb.Client {
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	if err != nil {
		b.Fatal(err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint, o.HTTPClient = aws.String("http://127.0.0.1:1"), &http.Client{Transport: committed{}}
	})
}

// patchWrite is the notes API's PATCH: an UpdateItem conditioned on the
// version the client last saw.
func patchWrite() types.TransactWriteItem {
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String("notes"),
		Key: map[string]types.AttributeValue{
			"user_id": &types.AttributeValueMemberS{Value: "alice"}, "id": &types.AttributeValueMemberS{Value: "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31"},
		},
		UpdateExpression:          aws.String("SET title = :t, version = :next"),
		ConditionExpression:       aws.String("version = :seen"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: "Errands"}, ":seen": n("1"), ":next": n("2")},
	}}
}

const patchBody = `{"title":"Errands","version":1}`

// BenchmarkOverhead is the package's cost per fresh mutation against a bare
// TransactWriteItems of the same write, on a client whose DynamoDB answers
// from memory: the record's Put beside the business write, the flow (its
// fingerprint and record), and the whole envelope behind an HTTP API
// handler (caller, key, canonical body, the answer). Run with -benchmem;
// compare each line's time and allocations with "bare".
func BenchmarkOverhead(b *testing.B) {
	client := benchClient(b)
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{patchWrite()}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	store := dynamodbstore.New(client, "ledger")
	b.Run("store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			now := time.Now()
			rec := idempotency.Record{UserID: "alice", Key: "8e03978e-40d5-43e8-bc93-6894a57f9324", PayloadHash: "h", StatusCode: 200,
				ResponseBody: []byte(patchBody), Method: "PATCH", Route: "/notes/{id}", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := store.Commit(ctx, rec, []types.TransactWriteItem{patchWrite()}, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	execute := func(context.Context, time.Time) (idempotency.Execution[types.TransactWriteItem], error) {
		return idempotency.Execution[types.TransactWriteItem]{
			Response: idempotency.Response{StatusCode: 200, Body: []byte(patchBody)},
			Writes:   []types.TransactWriteItem{patchWrite()},
		}, nil
	}
	// No replay cache: every request is fresh, and the cache would only
	// grow with the benchmark's keys.
	flow := idempotency.NewFlow(store, idempotency.Options{})
	b.Run("flow", func(b *testing.B) {
		canonical, _ := idempotency.Canonicalize([]byte(patchBody))
		b.ReportAllocs()
		for b.Loop() {
			req := idempotency.Request{UserID: "alice", Key: "8e03978e-40d5-43e8-bc93-6894a57f9324", Method: "PATCH", Route: "/notes/{id}", CanonicalBody: canonical}
			if _, err := flow.Do(ctx, req, execute); err != nil {
				b.Fatal(err)
			}
		}
	})
	handler := mutation.New(flow, mutation.Options{}).HTTPAPI(func(context.Context, *mutation.Request) (mutation.Plan[types.TransactWriteItem], error) {
		return mutation.Plan[types.TransactWriteItem]{Execute: execute}, nil
	}, nil)
	b.Run("http-api", func(b *testing.B) {
		req := events.APIGatewayV2HTTPRequest{RouteKey: "PATCH /notes/{id}", Body: patchBody, Headers: map[string]string{
			"content-type": "application/json", "idempotency-key": "8e03978e-40d5-43e8-bc93-6894a57f9324"}}
		req.RequestContext.HTTP.Method = "PATCH"
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}}}
		b.ReportAllocs()
		for b.Loop() {
			if resp, err := handler(ctx, req); err != nil || resp.StatusCode != 200 {
				b.Fatal(resp.StatusCode, resp.Body, err)
			}
		}
	})
}
