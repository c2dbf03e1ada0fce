package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/metrics"
)

// TestMetricsLinePerRequest: each request writes one metrics line, whose
// Outcome and ErrorCode say what the client was answered and whose DynamoDB
// figures are what the request cost, counted at the SDK.
func TestMetricsLinePerRequest(t *testing.T) {
	hs := apitest.New(t)
	rec := &apitest.Recorder{}
	key, id := uuid.NewString(), uuid.NewString()
	body := apitest.EventBody(t, id)
	throttle := ddbtest.Fault{Kind: ddbtest.ServiceError, Code: "ThrottlingException", Status: http.StatusBadRequest, Op: "TransactWriteItems", Times: sdkAttempts}
	steps := []struct {
		name    string
		send    func()
		outcome string
		code    string
		calls   int // DynamoDB operations called
		retries int
		events  int // events the mutation read: none where the replay cache answered
	}{
		{"fresh", func() { hs.Send(rec, "alice", key, id, body) }, "executed", "", 1, 0, 1},
		{"replay, answered from memory", func() { hs.Send(rec, "alice", key, id, body) }, "replayed", "", 0, 0, 0},
		{"same key, other body", func() { hs.Send(rec, "alice", key, id, apitest.EventBody(t, uuid.NewString())) }, "key_reused", "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD", 0, 0, 0},
		{"no key", func() { hs.Post("alice", "", body) }, "refused", "VALIDATION_FAILED", 0, 0, 0},
		{"a page from the start (the floor, then the page)", func() { hs.Get("alice", nil) }, "read", "", 2, 0, 0},
		{"a batch of 7", func() { postBatch(hs, "alice", uuid.NewString(), batchOf(someEvents(7))) }, "executed", "", 1, 0, 7},
		{"throttled every attempt", func() {
			hs.B.Transport.Inject(throttle)
			hs.Send(rec, "alice", uuid.NewString(), uuid.NewString(), apitest.EventBody(t, uuid.NewString()))
		}, "error", "SERVICE_UNAVAILABLE", 1, sdkAttempts - 1, 1},
	}
	for _, s := range steps {
		s.send()
		m, raw := hs.LastMetrics(t)
		if m.Outcome != s.outcome || m.ErrorCode != s.code || m.Requests != 1 {
			t.Errorf("%s: Outcome %q ErrorCode %q Requests %d, want %q %q 1", s.name, m.Outcome, m.ErrorCode, m.Requests, s.outcome, s.code)
		}
		if m.Events != s.events {
			t.Errorf("%s: %d events, want %d", s.name, m.Events, s.events)
		}
		if m.DynamoDBCalls != s.calls || m.DynamoDBRetries != s.retries {
			t.Errorf("%s: %d DynamoDB calls and %d retries, want %d and %d", s.name, m.DynamoDBCalls, m.DynamoDBRetries, s.calls, s.retries)
		}
		if s.name == "throttled every attempt" && m.DynamoDBThrottles != sdkAttempts {
			t.Errorf("%s: %d throttles counted, want %d", s.name, m.DynamoDBThrottles, sdkAttempts)
		}
		if m.Latency <= 0 || (s.calls > 0 && m.DynamoDBLatency <= 0) || m.RequestID == "" {
			t.Errorf("%s: latency %v, DynamoDB latency %v, request id %q", s.name, m.Latency, m.DynamoDBLatency, m.RequestID)
		}
		if !isOutcome(m.Outcome) {
			t.Errorf("%s: Outcome %q is not one of metrics.Outcomes", s.name, m.Outcome)
		}
		for _, secret := range []string{"alice", key, id} {
			if strings.Contains(raw, secret) {
				t.Errorf("%s: the metrics line carries %q: %s", s.name, secret, raw)
			}
		}
	}
}

// TestMetricsCountConflictRetries: a transaction cancelled twice for a
// conflict with a concurrent one, then committed, is one executed request
// with two conflict retries; one cancelled on every try is
// conflict_exhausted.
func TestMetricsCountConflictRetries(t *testing.T) {
	conflict := func(times int) ddbtest.Fault {
		return ddbtest.Fault{Kind: ddbtest.ServiceError, Code: "TransactionCanceledException", Status: http.StatusBadRequest,
			Reasons: []string{"TransactionConflict", "None"}, Op: "TransactWriteItems", Times: times}
	}
	tests := []struct {
		name      string
		conflicts int
		outcome   string
		retries   int
	}{
		{"two conflicts, then a commit", 2, "executed", 2},
		{"a conflict on every try", 100, "conflict_exhausted", 5}, // the flow tries 6 times
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := apitest.New(t)
			hs.B.Transport.Inject(conflict(tt.conflicts))
			id := uuid.NewString()
			hs.Post("alice", uuid.NewString(), apitest.EventBody(t, id))
			m, _ := hs.LastMetrics(t)
			if m.Outcome != tt.outcome || m.TransactionConflictRetries != tt.retries {
				t.Fatalf("Outcome %q with %d conflict retries, want %q with %d", m.Outcome, m.TransactionConflictRetries, tt.outcome, tt.retries)
			}
		})
	}
}

func isOutcome(s string) bool {
	for _, o := range metrics.Outcomes {
		if o == s {
			return true
		}
	}
	return false
}
