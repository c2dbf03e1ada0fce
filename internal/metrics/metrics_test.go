package metrics_test

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/jsonschema/v6"

	"github.com/sync-events/sync-events/internal/metrics"
)

// TestLinesAreEmbeddedMetricFormat: every line the writer produces is an
// EMF document: valid against the specification's structure
// (testdata/emf.schema.json), every dimension and metric it declares is a
// root member of the right type (a string; a number), the dimension values
// are a closed set, and the line is one JSON object on one line, under
// CloudWatch Logs' 1 MB event limit.
func TestLinesAreEmbeddedMetricFormat(t *testing.T) {
	schema := compileSchema(t)
	var out bytes.Buffer
	w := metrics.NewWriter(&out, "sync-events-prod-SyncEventsFunction-AbC")
	requests := []metrics.Request{
		{Outcome: "executed", RequestID: "r-1", TraceID: "1-5759e988-bd862e3fe1be46a994272793", Latency: 12 * time.Millisecond, Calls: 1, CallLatency: 9 * time.Millisecond},
		{Outcome: "refused", ErrorCode: "VALIDATION_FAILED", RequestID: "r-2", Latency: time.Millisecond},
		{Outcome: "error", ErrorCode: "SERVICE_UNAVAILABLE", RequestID: "r-3", Calls: 1, Retries: 2, Throttles: 3, ConflictRetries: 1},
	}
	for _, r := range requests {
		w.Write(r)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(requests) {
		t.Fatalf("%d lines for %d requests", len(lines), len(requests))
	}
	for i, line := range lines {
		if len(line) > 1<<20 {
			t.Errorf("line %d is %d bytes", i, len(line))
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		if err := schema.Validate(doc); err != nil {
			t.Errorf("line %d is not EMF: %v\n%s", i, err, line)
		}
		checkReferences(t, line, requests[i])
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/emf.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("emf.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("emf.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkReferences holds a line to what the schema cannot say: references
// name root members, dimensions are strings of a closed set, metrics are
// numbers, and the figures are the request's.
func checkReferences(t *testing.T, line string, r metrics.Request) {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal([]byte(line), &root); err != nil {
		t.Fatal(err)
	}
	var meta struct {
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	raw, _ := json.Marshal(root["_aws"])
	wantDirectives := 1
	if r.ErrorCode != "" {
		wantDirectives = 2
	}
	if err := json.Unmarshal(raw, &meta); err != nil || len(meta.CloudWatchMetrics) != wantDirectives {
		t.Fatalf("_aws: %s (%v), want %d directives", raw, err, wantDirectives)
	}
	allowed := map[string][]string{metrics.DimOutcome: metrics.Outcomes, metrics.DimCode: {r.ErrorCode}, metrics.DimFunction: {"sync-events-prod-SyncEventsFunction-AbC"}}
	for i, d := range meta.CloudWatchMetrics {
		if d.Namespace != metrics.Namespace {
			t.Errorf("namespace %q", d.Namespace)
		}
		for _, set := range d.Dimensions {
			for _, dim := range set {
				v, ok := root[dim].(string)
				if !ok || !contains(allowed[dim], v) {
					t.Errorf("dimension %s is %v: not a string of its closed set", dim, root[dim])
				}
			}
		}
		for _, m := range d.Metrics {
			if _, ok := root[m.Name].(float64); !ok {
				t.Errorf("metric %s is %v, not a number", m.Name, root[m.Name])
			}
		}
		// The first directive: every metric by outcome; the second: the
		// request count by outcome and error code.
		var want []metrics.Metric
		var dims [][]string
		if i == 0 {
			want, dims = metrics.All, [][]string{{metrics.DimFunction, metrics.DimOutcome}}
		} else {
			want, dims = []metrics.Metric{metrics.Requests}, [][]string{{metrics.DimFunction, metrics.DimOutcome, metrics.DimCode}}
		}
		var got []metrics.Metric
		for _, m := range d.Metrics {
			got = append(got, metrics.Metric{Name: m.Name, Unit: m.Unit})
		}
		if !slices.Equal(got, want) || !slices.EqualFunc(d.Dimensions, dims, slices.Equal) {
			t.Errorf("directive %d: metrics %v by %v, want %v by %v", i, got, d.Dimensions, want, dims)
		}
	}
	want := map[string]float64{
		metrics.Requests.Name: 1, metrics.DynamoDBCalls.Name: float64(r.Calls), metrics.DynamoDBRetries.Name: float64(r.Retries),
		metrics.DynamoDBThrottles.Name: float64(r.Throttles), metrics.ConflictRetries.Name: float64(r.ConflictRetries),
		metrics.Latency.Name: float64(r.Latency.Microseconds()) / 1000, metrics.DynamoDBLatency.Name: float64(r.CallLatency.Microseconds()) / 1000,
	}
	for name, v := range want {
		if root[name] != v {
			t.Errorf("%s is %v, want %v", name, root[name], v)
		}
	}
	if root["request_id"] != r.RequestID || (r.TraceID != "" && root["trace_id"] != r.TraceID) {
		t.Errorf("request_id %v, trace_id %v; want %q, %q", root["request_id"], root["trace_id"], r.RequestID, r.TraceID)
	}
	for _, k := range []string{"time", "level", "msg"} {
		if _, ok := root[k]; ok {
			t.Errorf("slog's %q is in the line", k)
		}
	}
}

func contains(set []string, v string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}
