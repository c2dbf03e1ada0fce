package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/internal/apitest"
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
	const budget = 1500 * time.Millisecond
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

// TestFaultsOnReads: the fallback GetItem of a replay and the Query of a GET
// page fail; both answer 503 and nothing changes.
func TestFaultsOnReads(t *testing.T) {
	hs := apitest.New(t)
	rec := &apitest.Recorder{}
	key, id := uuid.NewString(), uuid.NewString()
	body := apitest.EventBody(t, id)
	apitest.WantResponse(t, hs.Post("alice", key, body), 201, "")
	for _, op := range []string{"GetItem", "Query"} {
		hs.B.Transport.Reset()
		f := hs.B.Transport.Inject(ddbtest.Fault{Op: op, Kind: ddbtest.Refused, Times: sdkAttempts})
		var resp = hs.Get("alice", nil)
		if op == "GetItem" {
			resp = hs.Post("alice", key, body)
		}
		if f.Fired() == 0 {
			t.Logf("%s: this backend returned the item with the failed condition, no read to fail", op)
			continue
		}
		apitest.WantResponse(t, resp, 503, string(errcode.ServiceUnavailable))
	}
	hs.B.Transport.Reset()
	rec.Add(apitest.ExchangeOf("alice", key, id, body, hs.Post("alice", key, body)))
	hs.CheckInvariants(rec)
}
