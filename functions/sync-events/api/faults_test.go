package api_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
)

// sdkAttempts is how many times the SDK's standard retryer sends a call.
const sdkAttempts = 3

// TestFaultsConvergeToOneEvent injects each kind of failure into the
// TransactWriteItems call at the SDK's HTTP transport, as often as the SDK
// retries (so the handler sees the failure), and checks that the client is
// told to retry, that nothing is half-written, and that the app's retry loop
// converges to one event and the original answer.
func TestFaultsConvergeToOneEvent(t *testing.T) {
	throttle := func(code string) ddbtest.Fault {
		return ddbtest.Fault{Kind: ddbtest.ServiceError, Code: code, Status: http.StatusBadRequest}
	}
	tests := []struct {
		name  string
		fault ddbtest.Fault
		// committed: the fault strikes after DynamoDB has applied the call.
		committed bool
	}{
		{"connection refused before sending", ddbtest.Fault{Kind: ddbtest.Refused}, false},
		{"ProvisionedThroughputExceededException", throttle("ProvisionedThroughputExceededException"), false},
		{"ThrottlingException", throttle("ThrottlingException"), false},
		{"TransactionInProgressException", throttle("TransactionInProgressException"), false},
		{"InternalServerError", ddbtest.Fault{Kind: ddbtest.ServiceError, Code: "InternalServerError", Status: http.StatusInternalServerError}, false},
		{"connection reset after commit", ddbtest.Fault{Kind: ddbtest.LostAnswer}, true},
	}
	injected := map[string]int{}
	for _, tt := range tests {
		for _, times := range []int{1, sdkAttempts} {
			t.Run(tt.name, func(t *testing.T) {
				hs := apitest.New(t)
				rec := &apitest.Recorder{}
				key, id := uuid.NewString(), uuid.NewString()
				body := apitest.EventBody(t, id)
				f := tt.fault
				f.Op, f.Times = "TransactWriteItems", times
				fault := hs.B.Transport.Inject(f)

				first := hs.Send(rec, "alice", key, id, body)
				injected[tt.name] += fault.Fired()
				if fault.Fired() != times {
					t.Fatalf("fault fired %d times, want %d", fault.Fired(), times)
				}
				switch {
				case times < sdkAttempts && first.Status != 201:
					t.Fatalf("the SDK's retry should have absorbed one fault; got %d %s", first.Status, first.Body)
				case times == sdkAttempts && first.Status != 503:
					t.Fatalf("got %d %s, want a retryable 503", first.Status, first.Body)
				}
				if first.Status == 503 {
					wantAllOrNothing(hs, key, id, tt.committed)
					wantWording(t, first.Body, tt.committed)
				}
				final := hs.RetryingSend(rec, "alice", key, id, body, 5)
				if final.Status != 201 {
					t.Fatalf("the client's retries ended on %d %s", final.Status, final.Body)
				}
				hs.CheckInvariants(rec)
			})
		}
	}
	t.Logf("faults injected into TransactWriteItems, by kind: %v", injected)
}

// wantWording checks that a 503 never overstates: after a commit that
// may have been applied it must not say that nothing was stored.
func wantWording(t *testing.T, body string, committed bool) {
	t.Helper()
	switch maybe := strings.Contains(body, "may have been stored"); {
	case committed && !maybe:
		t.Errorf("after a commit that was applied the 503 says %s; want that the change may have been stored", body)
	case strings.Contains(body, "nothing was stored") && maybe:
		t.Errorf("the 503 says both: %s", body)
	case !maybe && !strings.Contains(body, "nothing was stored"):
		t.Errorf("the 503 says neither what may have been stored nor that nothing was: %s", body)
	}
}

// wantAllOrNothing checks that the event and its ledger record are either
// both stored or both absent, and which one is expected.
func wantAllOrNothing(hs *apitest.Harness, key, id string, stored bool) {
	hs.T.Helper()
	ledger := false
	for _, r := range hs.B.LedgerRecords(hs.T) {
		ledger = ledger || r.Key == key
	}
	event := len(hs.Stored()["alice"]) == 1 && hs.Stored()["alice"][0] == id
	if ledger != event || ledger != stored {
		hs.T.Fatalf("after the failure: ledger record %v, event %v; want both %v", ledger, event, stored)
	}
}

// TestStalledAnswerAnswers503BeforeTheDeadline: DynamoDB commits but its
// answer never comes. The handler gives up deadlineMargin before the Lambda
// deadline and answers a retryable 503; the retry replays.
func TestStalledAnswerAnswers503BeforeTheDeadline(t *testing.T) {
	hs := apitest.New(t)
	rec := &apitest.Recorder{}
	key, id := uuid.NewString(), uuid.NewString()
	body := apitest.EventBody(t, id)
	hs.B.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.StalledAnswer, Times: 1})
	// The handler gives up at budget - deadlineMargin. Before that the
	// stalled call must have reached the backend and been applied (the
	// transport waits for that): milliseconds, but more than a second on
	// moto under -race on a loaded 2-core machine, where a budget of
	// 1.5 s (giving up at 1 s) raced it. 3 s leaves the backend 2.5 s;
	// the handler's own answer after giving up must still fit in
	// deadlineMargin, which is the claim under test.
	const budget = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	req := apitest.Request("POST", "alice", key, body)
	resp, err := hs.H.Handle(ctx, req)
	if err != nil || resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" {
		t.Fatalf("got %d %v %s, %v", resp.StatusCode, resp.Headers, resp.Body, err)
	}
	apitest.CheckContract(t, req, resp)
	if ctx.Err() != nil {
		t.Fatal("the handler answered only after the deadline")
	}
	rec.Add(apitest.ExchangeOf("alice", key, id, body, resp))
	wantAllOrNothing(hs, key, id, true)
	if final := hs.RetryingSend(rec, "alice", key, id, body, 3); final.Status != 201 || !final.Replayed {
		t.Fatalf("retry: %d replayed=%v", final.Status, final.Replayed)
	}
	hs.CheckInvariants(rec)
}

// TestFaultsOnReads: the reads a request makes fail as often as the SDK
// retries; the answer is a retryable 503, nothing is written, and a retry
// once the fault has passed gets what it would have got.
//
// A key another environment committed is known only to DynamoDB, so the
// replay and the 409 are sent from a fresh environment (an empty replay
// cache). There the commit's failed condition is what reads the record on a
// backend that returns the item with it (DynamoDB, moto); on one that does
// not (kumo) it is the GetItem after it. Each backend's own read is
// faulted, and the fallback GetItem too on every backend, by taking the
// items out of the failed transaction's answer.
func TestFaultsOnReads(t *testing.T) {
	for _, path := range []struct {
		name  string
		other bool // the same key with another body: the 409
	}{{"replay", false}, {"key reused", true}} {
		t.Run(path.name, func(t *testing.T) {
			hs := apitest.New(t)
			rec := &apitest.Recorder{}
			key, id := uuid.NewString(), uuid.NewString()
			body := apitest.EventBody(t, id)
			sentID, sent := id, body
			if path.other {
				sentID = uuid.NewString()
				sent = apitest.EventBody(t, sentID)
			}
			first := hs.Send(rec, "alice", key, id, body)
			if first.Status != 201 {
				t.Fatalf("first: %d %s", first.Status, first.Body)
			}
			want := func(t *testing.T, x apitest.Exchange) {
				t.Helper()
				switch {
				case path.other && (x.Status != 409 || x.Body != apitest.SeedKeyReusedBody):
					t.Fatalf("got %d %s, want the seed's 409", x.Status, x.Body)
				case !path.other && (x.Status != 201 || x.Body != first.Body || !x.Replayed):
					t.Fatalf("got %d %s (replayed %v), want the first answer %s replayed", x.Status, x.Body, x.Replayed, first.Body)
				}
			}

			// Which call reads the known record on this backend.
			hs.B.Transport.Reset()
			probe := hs.NewEnvironment()
			want(t, probe.Send(rec, "alice", key, sentID, sent))
			ownRead := "TransactWriteItems" // its failed condition returned the record
			if hs.B.Transport.Calls()["GetItem"] > 0 {
				ownRead = "GetItem"
			}
			t.Logf("%s reads a known key with %v", hs.B.Name, hs.B.Transport.Calls())

			for _, target := range []string{ownRead, "GetItem after no item"} {
				if target == "GetItem after no item" && ownRead == "GetItem" {
					continue // the case above
				}
				t.Run(target, func(t *testing.T) {
					env := hs.NewEnvironment()
					before := tableItems(hs)
					hs.B.Transport.Reset()
					op := target
					if target == "GetItem after no item" {
						op = "GetItem"
						hs.B.Transport.Inject(ddbtest.Fault{Op: "TransactWriteItems", Kind: ddbtest.NoOldItems, Times: 1 << 30})
					}
					f := hs.B.Transport.Inject(ddbtest.Fault{Op: op, Kind: ddbtest.Refused, Times: sdkAttempts})
					resp := env.Post("alice", key, sent)
					rec.Add(apitest.ExchangeOf("alice", key, sentID, sent, resp))
					if f.Fired() != sdkAttempts {
						t.Fatalf("the %s fault fired %d times, want %d (calls %v)", op, f.Fired(), sdkAttempts, hs.B.Transport.Calls())
					}
					apitest.WantResponse(t, resp, 503, string(errcode.ServiceUnavailable))
					if resp.Headers["Retry-After"] == "" {
						t.Fatalf("a 503 without Retry-After: %v", resp.Headers)
					}
					if after := tableItems(hs); after != before {
						t.Fatalf("a failed read changed the tables:\nbefore %s\nafter  %s", before, after)
					}
					// The fault passes; the same environment's retry reads
					// the record again (the failure cached nothing).
					hs.B.Transport.Reset()
					retry := env.Send(rec, "alice", key, sentID, sent)
					want(t, retry)
					if m, line := env.LastMetrics(t); m.DynamoDBCalls == 0 {
						t.Fatalf("the retry was answered with no DynamoDB call: %s", line)
					}
				})
			}
			hs.CheckInvariants(rec)
		})
	}
	t.Run("GET page", func(t *testing.T) {
		hs := apitest.New(t)
		apitest.WantResponse(t, hs.Post("alice", uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
		f := hs.B.Transport.Inject(ddbtest.Fault{Op: "Query", Kind: ddbtest.Refused, Times: sdkAttempts})
		apitest.WantResponse(t, hs.Get("alice", nil), 503, string(errcode.ServiceUnavailable))
		if f.Fired() != sdkAttempts {
			t.Fatalf("the Query fault fired %d times, want %d", f.Fired(), sdkAttempts)
		}
		if p := hs.Pull("alice", "", 10); len(p.Events) != 1 {
			t.Fatalf("after the fault: %d events listed, want 1", len(p.Events))
		}
	})
}

// tableItems is every item of both tables, head items included, in a
// stable form, to compare before and after a request that must write
// nothing.
func tableItems(hs *apitest.Harness) string {
	hs.T.Helper()
	var all []string
	for _, table := range []string{hs.B.Tables.Ledger, hs.B.Tables.Events} {
		out, err := hs.B.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		if err != nil {
			hs.T.Fatal(err)
		}
		for _, item := range out.Items {
			var b strings.Builder
			for _, k := range slices.Sorted(maps.Keys(item)) {
				fmt.Fprintf(&b, "%s=%v;", k, item[k])
			}
			all = append(all, b.String())
		}
	}
	slices.Sort(all)
	return strings.Join(all, "\n")
}
