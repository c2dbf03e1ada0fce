package apitest

import (
	"bytes"
	"encoding/json"
	"testing"
)

// MetricsLine is the part of a metrics line the tests read.
type MetricsLine struct {
	Outcome, ErrorCode                 string
	Requests, DynamoDBCalls            int
	DynamoDBRetries, DynamoDBThrottles int
	TransactionConflictRetries, Events int
	Latency, DynamoDBLatency           float64
	RequestID                          string `json:"request_id"`
}

// LastMetrics is the metrics line of hs's latest request.
func (hs *Harness) LastMetrics(t testing.TB) (MetricsLine, string) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace([]byte(hs.Metrics())), []byte("\n"))
	raw := lines[len(lines)-1]
	var m MetricsLine
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("metrics line %s: %v", raw, err)
	}
	return m, string(raw)
}
