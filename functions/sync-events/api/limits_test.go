package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sync-events/sync-events/functions/sync-events/api"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Each test here holds one limit at its edge on the path after the one
// that accepts it: what POST takes, GET must serve unchanged.

func event(payload string) sentEvent {
	return sentEvent{ID: uuid.NewString(), Type: "note.created", OccurredAt: "2026-12-02T14:03:00Z", Payload: payload}
}

// nested is a payload levels deep (the payload object is level 1).
func nested(levels int) string {
	return `{"d":` + strings.Repeat("[", levels-1) + `0` + strings.Repeat("]", levels-1) + `}`
}

// padded is an event whose body is exactly size bytes, its payload one
// string of filler (each filler is one JSON token of a string's inside).
func padded(t testing.TB, size int, filler string) sentEvent {
	t.Helper()
	return pad(t, event(`{"s":""}`), size, filler)
}

// pad is e with its payload replaced so that its body is size bytes.
func pad(t testing.TB, e sentEvent, size int, filler string) sentEvent {
	t.Helper()
	e.Payload = `{"s":""}`
	room := size - len(e.body())
	if room < 0 {
		t.Fatalf("size %d is under the envelope", size)
	}
	fill := strings.Repeat(filler, room/len(filler)) + strings.Repeat("x", room%len(filler))
	e.Payload = `{"s":"` + fill + `"}`
	if len(e.body()) != size {
		t.Fatalf("padded to %d, want %d", len(e.body()), size)
	}
	return e
}

// Finding 1: the deepest payload POST accepts is served by every GET page
// holding it, and the events after it stay reachable.
func TestDeepestAcceptedPayloadIsServed(t *testing.T) {
	hs := apitest.New(t)
	deep := event(nested(syncevent.MaxPayloadDepth))
	sent := []sentEvent{event(`{"n":1}`), deep, event(`{"n":2}`)}
	pushAll(hs, "deep", sent)
	wantListed(t, walk(hs, "deep", 1), sent)
	wantListed(t, walk(hs, "deep", 50), sent)

	// Up to the decoder's own limit the payload is named; past it, the body.
	for _, levels := range []int{syncevent.MaxPayloadDepth + 1, 9998, 9999, 10000} {
		resp := hs.Post("deep", uuid.NewString(), event(nested(levels)).body())
		apitest.WantResponse(t, resp, 400, string(errcode.ValidationFailed))
		if field := map[bool]string{true: "payload", false: "body"}[levels < 10000]; !strings.Contains(resp.Body, `"field":"`+field+`"`) {
			t.Fatalf("%d levels: %.300s", levels, resp.Body)
		}
	}
	wantListed(t, walk(hs, "deep", 1), sent)
}

// Finding 2: pages are bounded by bytes as the Lambda response carries
// them, not only by count. 28 events of 250 KB overflowed Lambda's 6 MB
// with the default limit; events whose every byte is a quote to escape
// take twice their size in the response.
func TestPagesFitALambdaResponse(t *testing.T) {
	for _, tc := range []struct {
		name, filler string
	}{
		{"plain text", "x"},
		{"all quotes", `\"`},
		{"line separators", "\u2028"},
		{"escaped controls", `\u0001`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := apitest.New(t)
			var sent []sentEvent
			for range 28 {
				sent = append(sent, padded(t, 250_000, tc.filler))
			}
			pushAll(hs, "big", sent)
			got := walk(hs, "big", api.DefaultPageSize)
			wantListed(t, got, sent)
			first := hs.Get("big", nil)
			var n int
			if n = strings.Count(first.Body, `"id":`); n >= 28 {
				t.Fatalf("the first page holds all %d events", n)
			}
			t.Logf("%s: first page %d events, %d bytes as a Lambda response", tc.name, n, lambdaResponseSize(t, first))
		})
	}
}

// Finding 2, the other edge: the largest event POST accepts fits a page,
// even made of the characters that grow most in the Lambda response.
func TestLargestAcceptedEventFitsAPage(t *testing.T) {
	hs := apitest.New(t)
	for _, filler := range []string{`\"`, `\\`, "\u2028", `\u0001`, "x"} {
		e := padded(t, config.DefaultMaxBodyBytes, filler)
		user := "max-" + uuid.NewString()
		pushAll(hs, user, []sentEvent{e})
		wantListed(t, walk(hs, user, 1), []sentEvent{e})
	}
}

// Finding 3: no log line carries payload content, on any path. A marker
// stands in every member name and value; each error path runs once.
func TestErrorLogsCarryNoPayload(t *testing.T) {
	const marker = "marker-7f3a@example.com"
	hs := apitest.New(t)
	body := func() string {
		return event(`{"` + marker + `":"` + marker + `","n":[{"` + marker + `":1}]}`).body()
	}
	key := uuid.NewString()
	apitest.WantResponse(t, hs.Post("user-9c1d", key, body()), 201, "")
	apitest.WantResponse(t, hs.Post("user-9c1d", key, body()), 409, string(errcode.KeyReused))
	apitest.WantResponse(t, hs.Post("user-9c1d", uuid.NewString(), `{"`+marker+`":1}`), 400, string(errcode.ValidationFailed))
	apitest.WantResponse(t, hs.Post("user-9c1d", uuid.NewString(), `{"id":"`+marker+`",`), 400, string(errcode.ValidationFailed))
	apitest.WantResponse(t, hs.Post("user-9c1d", uuid.NewString(), event(`{"`+marker+`":"\uffff"}`).body()), 400, string(errcode.ValidationFailed))
	apitest.WantResponse(t, hs.Post("user-9c1d", uuid.NewString(), event(nested(syncevent.MaxPayloadDepth+1)).body()), 400, string(errcode.ValidationFailed))

	faults := []struct {
		op     string
		fault  ddbtest.Fault
		status int
	}{
		// Times: the SDK's own attempts, for what it retries.
		{"TransactWriteItems", ddbtest.Fault{Kind: ddbtest.ServiceError, Code: "ThrottlingException", Status: 400, Times: sdkAttempts}, 503},
		{"TransactWriteItems", ddbtest.Fault{Kind: ddbtest.ServiceError, Code: "ValidationException", Status: 400, Times: 1}, 500},
		{"TransactWriteItems", ddbtest.Fault{Kind: ddbtest.ServiceError, Code: "TransactionCanceledException", Status: 400,
			Reasons: []string{"None", "ItemCollectionSizeLimitExceeded"}, Times: 1}, 409},
		{"Query", ddbtest.Fault{Kind: ddbtest.ServiceError, Code: "InternalServerError", Status: 500, Times: sdkAttempts}, 503},
	}
	for _, f := range faults {
		f.fault.Op = f.op
		hs.B.Transport.Inject(f.fault)
		var resp events.APIGatewayV2HTTPResponse
		if f.op == "Query" {
			resp = hs.Get("user-9c1d", nil)
		} else {
			resp = hs.Post("user-9c1d", uuid.NewString(), body())
		}
		apitest.WantResponse(t, resp, f.status, "")
	}
	// A stored item this code could not have written: its payload is not
	// JSON, and the encoder's error would quote the marker.
	putRawEvent(t, hs, "user-9c1d", `{"`+marker+`":[}`)
	apitest.WantResponse(t, hs.Get("user-9c1d", nil), 500, string(errcode.Internal))
	errorLines := strings.Count(hs.Logs(), `"error":"`)
	if errorLines < len(faults)+1 {
		t.Fatalf("%d log lines with an error, want at least %d", errorLines, len(faults)+1)
	}
	wantCleanLogs(hs, nil, marker, "user-9c1d")
}

// putRawEvent stores an event item straight into the table, with payload
// as its payload attribute, at the head of user's receive order.
func putRawEvent(t testing.TB, hs *apitest.Harness, user, payload string) {
	t.Helper()
	id := uuid.NewString()
	_, err := hs.B.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(hs.B.Tables.Events),
		Item: map[string]types.AttributeValue{
			"user_id": &types.AttributeValueMemberS{Value: user}, "event_id": &types.AttributeValueMemberS{Value: id},
			"received_key": &types.AttributeValueMemberS{Value: "2000-01-01T00:00:00.000Z#" + id},
			"type":         &types.AttributeValueMemberS{Value: "t"}, "occurred_at": &types.AttributeValueMemberS{Value: "2026-12-02T14:03:00Z"},
			"received_at": &types.AttributeValueMemberS{Value: "2000-01-01T00:00:00.000Z"}, "payload": &types.AttributeValueMemberS{Value: payload},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Finding 4: every failure's message is true for the request it answers:
// a read has no key and stores nothing.
func TestFailureMessagesFitTheMethod(t *testing.T) {
	hs := apitest.New(t)
	putRawEvent(t, hs, "broken", `{"a":[}`)
	read500 := hs.Get("broken", nil)
	hs.B.Transport.Inject(ddbtest.Fault{Op: "Query", Kind: ddbtest.ServiceError, Code: "InternalServerError", Status: 500, Times: sdkAttempts})
	read503 := hs.Get("reader", nil)
	hs.B.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.ServiceError, Code: "ValidationException", Status: 400, Times: 1})
	write500 := hs.Post("writer", uuid.NewString(), event(`{}`).body())
	hs.B.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.ServiceError, Code: "InternalServerError", Status: 500, Times: sdkAttempts})
	write503 := hs.Post("writer", uuid.NewString(), event(`{}`).body())
	for _, tc := range []struct {
		name   string
		resp   events.APIGatewayV2HTTPResponse
		status int
		write  bool
	}{
		{"GET 500", read500, 500, false}, {"GET 503", read503, 503, false},
		{"POST 500", write500, 500, true}, {"POST 503", write503, 503, true},
	} {
		apitest.WantResponse(t, tc.resp, tc.status, "")
		speaksOfWrites := strings.Contains(tc.resp.Body, "Idempotency-Key") || strings.Contains(tc.resp.Body, "stored")
		if speaksOfWrites != tc.write {
			t.Errorf("%s: %s", tc.name, tc.resp.Body)
		}
	}
}

// Finding 5 is in the hostile table (noncharacters) and in
// internal/idempotency; finding 6 in internal/syncevent, and here: each
// legal form of occurredAt comes back as sent, each illegal one is a 400.
func TestOccurredAtComesBackAsSent(t *testing.T) {
	hs := apitest.New(t)
	var sent []sentEvent
	for _, at := range []string{"2026-12-02t14:03:00z", "2016-12-31T23:59:60Z", "2026-12-02T14:03:00.123456789012-00:00", "2026-12-02T14:03:00+23:59"} {
		e := event(`{}`)
		e.OccurredAt = at
		sent = append(sent, e)
	}
	pushAll(hs, "times", sent)
	wantListed(t, walk(hs, "times", 10), sent)
	for _, at := range []string{"2026-12-02T14:03:00,5Z", "2026-12-02T14:03:00+24:00", "2026-12-02T14:03:00+01:60", "2026-12-02T4:03:00Z", "2026-12-02 14:03:00Z"} {
		e := event(`{}`)
		e.OccurredAt = at
		apitest.WantResponse(t, hs.Post("times", uuid.NewString(), e.body()), 400, string(errcode.ValidationFailed))
	}
}

// Finding 7: numbers come back spelled as sent, beyond what a double holds
// too; a number no double can hold at all (overflow) is a 400.
func TestNumbersComeBackAsSent(t *testing.T) {
	hs := apitest.New(t)
	spellings := []string{"9007199254740993", "1e-400", "-0", "-0.0", "1E+2", "0.10000000000000001", "1.50",
		"123456789012345678901234567890", "5e-324", "1.7976931348623157e308", "-1.5e-7"}
	var sent []sentEvent
	for _, n := range spellings {
		sent = append(sent, event(`{"n":`+n+`,"in":[`+n+`,{"m":`+n+`}]}`))
	}
	pushAll(hs, "numbers", sent)
	got := walk(hs, "numbers", 100)
	wantListed(t, got, sent)
	for i := range got {
		if !strings.Contains(string(got[i].Payload), `"n":`) {
			t.Fatalf("payload %s", got[i].Payload)
		}
	}
	for _, n := range []string{"1e400", "-1e309"} {
		apitest.WantResponse(t, hs.Post("numbers", uuid.NewString(), event(`{"n":`+n+`}`).body()), 400, string(errcode.ValidationFailed))
	}
	// The hash is RFC 8785's: a retry that spells a number otherwise is the
	// same request, and is answered with the replay.
	key := uuid.NewString()
	e := event(`{"n":1.0}`)
	first := hs.Post("numbers", key, e.body())
	e.Payload = `{"n":1}`
	again := hs.Post("numbers", key, e.body())
	if again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("a respelled number is not a replay: %d %s", again.StatusCode, again.Body)
	}
}

// Finding 8: a caller id DynamoDB would refuse as a partition key is
// refused before anything is sent, on both methods.
func TestCallerIDsDynamoDBCannotStoreAreRefused(t *testing.T) {
	hs := apitest.New(t)
	longest := strings.Repeat("u", dynamodbstore.MaxPartitionKeyBytes)
	e := event(`{}`)
	pushAll(hs, longest, []sentEvent{e})
	wantListed(t, walk(hs, longest, 10), []sentEvent{e})
	for _, sub := range []string{longest + "u", strings.Repeat("é", dynamodbstore.MaxPartitionKeyBytes/2+1), "bad\xffutf8"} {
		before := hs.B.Transport.Total()
		apitest.WantResponse(t, hs.Post(sub, uuid.NewString(), event(`{}`).body()), 403, string(api.CallerIDUnsupported))
		apitest.WantResponse(t, hs.Get(sub, nil), 403, string(api.CallerIDUnsupported))
		if calls := hs.B.Transport.Total() - before; calls != 0 {
			t.Fatalf("%d DynamoDB calls for a caller id it would refuse", calls)
		}
	}
	// The other key attributes are the service's own, fixed in width.
	if n := len(syncevent.At(1<<64 - 1).SortKey()); n > dynamodbstore.MaxSortKeyBytes {
		t.Fatalf("a received_key of %d bytes", n)
	}
}

// Finding 9: the stage is stripped only as a whole leading segment, and
// only on the generated domain, where API Gateway puts it.
func TestStageIsStrippedOnlyWhereAPIGatewayAddsIt(t *testing.T) {
	const generated, custom = "abc123def4.execute-api.eu-west-1.amazonaws.com", "sync.example.com"
	hs := apitest.New(t)
	for _, tc := range []struct {
		name, domain, stage, routeKey, path string
		status                              int
	}{
		{"default stage", generated, "$default", "$default", api.EventsPath, 200},
		{"named stage on the generated domain", generated, "prod", "$default", "/prod" + api.EventsPath, 200},
		{"stage named like the path's first segment, custom domain", custom, "api", "$default", api.EventsPath, 200},
		{"stage named like the path's first segment, generated domain", generated, "api", "$default", "/api" + api.EventsPath, 200},
		{"stage that is a prefix of a segment", generated, "pro", "$default", "/prod" + api.EventsPath, 404},
		{"stage not in front", generated, "prod", "$default", api.EventsPath + "/prod/x", 404},
		{"stage alone", generated, "prod", "$default", "/prod", 404},
		{"static route behind a base path mapping", custom, "prod", "GET " + api.EventsPath, "/v2" + api.EventsPath, 200},
		{"catch-all route behind a base path mapping", custom, "prod", "GET /{proxy+}", "/v2" + api.EventsPath, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := apitest.Request("GET", "stage-user", "", "")
			req.RequestContext.DomainName, req.RequestContext.Stage = tc.domain, tc.stage
			req.RouteKey, req.RequestContext.RouteKey = tc.routeKey, tc.routeKey
			req.RawPath, req.RequestContext.HTTP.Path = tc.path, tc.path
			apitest.WantResponse(t, hs.Do(req), tc.status, "")
		})
	}
}

// Finding 10: a user's item collection at DynamoDB's 10 GB is its own,
// non-retryable answer; nothing is written, nothing recorded.
func TestFullItemCollectionIsItsOwnAnswer(t *testing.T) {
	hs := apitest.New(t)
	for i, f := range []ddbtest.Fault{
		{Code: "TransactionCanceledException", Status: 400, Reasons: []string{"None", "ItemCollectionSizeLimitExceeded"}},
		{Code: "ItemCollectionSizeLimitExceededException", Status: 400},
	} {
		f.Op, f.Kind, f.Times = "TransactWriteItems", ddbtest.ServiceError, 1
		hs.B.Transport.Inject(f)
		key, body, user := uuid.NewString(), event(`{}`).body(), fmt.Sprint("full-", i)
		records := hs.LedgerCount()
		resp := hs.Post(user, key, body)
		apitest.WantResponse(t, resp, http.StatusConflict, string(eventstore.StorageFull))
		if resp.Headers["Retry-After"] != "" {
			t.Fatalf("a Retry-After on an answer that retrying cannot change")
		}
		if n := len(hs.Stored()[user]); n != 0 || hs.LedgerCount() != records {
			t.Fatalf("%s: %d events and %d records stored", f.Code, n, hs.LedgerCount()-records)
		}
		// Once there is room again, the same key goes through.
		apitest.WantResponse(t, hs.Post(user, key, body), 201, "")
	}
}

// The ledger replay at the largest answer POST can record: the longest
// type, every character of it escaped, the longest occurredAt, the largest
// body. Replays and the 409 are byte for byte, each from a fresh
// environment, so that they are read from the ledger, not the replay cache.
func TestLargestAnswersReplayByteForByte(t *testing.T) {
	hs := apitest.New(t)
	e := event(`{}`)
	e.Type = strings.Repeat("\u0001", syncevent.MaxTypeLen)
	e.OccurredAt = "2026-12-02T14:03:00." + strings.Repeat("9", syncevent.MaxOccurredAtLen-21) + "Z"
	e = pad(t, e, config.DefaultMaxBodyBytes, `\"`)
	key := uuid.NewString()
	first := hs.Post("largest", key, e.body())
	apitest.WantResponse(t, first, 201, "")
	if !strings.Contains(first.Body, strings.Repeat(`\u0001`, syncevent.MaxTypeLen)) {
		t.Fatalf("201 body %s", first.Body)
	}
	// fromLedger fails t unless env's last answer read DynamoDB: no
	// from_cache in its log line, and calls in its metrics line.
	fromLedger := func(env *apitest.Harness) {
		t.Helper()
		if m, line := env.LastMetrics(t); m.DynamoDBCalls == 0 {
			t.Fatalf("answered with no DynamoDB call: %s", line)
		}
		if strings.Contains(env.Logs(), `"from_cache":true`) {
			t.Fatalf("answered from the replay cache: %s", env.Logs())
		}
	}
	for range 2 {
		env := hs.NewEnvironment()
		again := env.Post("largest", key, e.body())
		if again.StatusCode != 201 || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
			t.Fatalf("replay %d %s, first %s", again.StatusCode, again.Body, first.Body)
		}
		fromLedger(env)
	}
	other := e
	other.Payload = `{"other":true}`
	env := hs.NewEnvironment()
	conflict := env.Post("largest", key, other.body())
	if conflict.StatusCode != 409 || conflict.Body != apitest.SeedKeyReusedBody {
		t.Fatalf("409 %s", conflict.Body)
	}
	fromLedger(env)
	wantListed(t, walk(hs, "largest", 1), []sentEvent{e})
}
