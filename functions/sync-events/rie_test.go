package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/local/rie"
)

// buildBinaries builds this function's bootstrap (with the Lambda build's
// flags, for this machine) and aws-lambda-rie (pinned in tools/go.mod).
func buildBinaries(t *testing.T) (bootstrap, emulator string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("aws-lambda-rie runs on Linux only")
	}
	bootstrap, emulator, err := rie.Build(t.TempDir(), ".")
	if err != nil {
		t.Fatal(err)
	}
	return bootstrap, emulator
}

// startFunction runs the real bootstrap under aws-lambda-rie on a fresh
// test backend, its output to stdout, until the end of t.
func startFunction(t *testing.T, stdout io.Writer) *rie.Function {
	t.Helper()
	bootstrap, emulator := buildBinaries(t)
	b := ddbtest.Start(t)
	fn, err := rie.Start(rie.Options{RIE: emulator, Bootstrap: bootstrap, Stdout: stdout, Env: []string{
		config.EnvEndpoint + "=" + b.Endpoint,
		config.EnvIdempotencyTable + "=" + b.Tables.Ledger,
		config.EnvEventsTable + "=" + b.Tables.Events,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fn.Stop)
	return fn
}

type expectation struct {
	Event    string `json:"event"`
	Status   int    `json:"status"`
	Error    string `json:"error"`
	Replayed bool   `json:"replayed"`
}

// TestEveryEventUnderTheRuntimeEmulator invokes the real bootstrap under
// aws-lambda-rie with every file in events/, in the manifest's order, on a
// real DynamoDB-compatible backend, and checks each expected answer.
func TestEveryEventUnderTheRuntimeEmulator(t *testing.T) {
	var logs strings.Builder
	fn := startFunction(t, &logs)
	raw, err := os.ReadFile("../../events/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var manifest []expectation
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../events/*.json")
	var listed []string
	for _, e := range manifest {
		listed = append(listed, "../../events/"+e.Event)
	}
	listed = append(listed, "../../events/expected.json")
	// A file may be listed more than once (a batch, then its replay).
	if slices.Sort(files); !slices.Equal(files, slices.Compact(slices.Sorted(slices.Values(listed)))) {
		t.Fatalf("events/ holds %v, the manifest lists %v", files, listed)
	}

	for _, want := range manifest {
		event, err := os.ReadFile("../../events/" + want.Event)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := fn.Invoke(ctx, event)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", want.Event, err)
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("%s: answer %s: %v", want.Event, out, err)
		}
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(event, &req); err != nil {
			t.Fatalf("%s: %v", want.Event, err)
		}
		apitest.CheckContract(t, req, resp)
		var body struct{ Error string }
		json.Unmarshal([]byte(resp.Body), &body) //nolint:errcheck // a 2xx body has no error field
		replayed := resp.Headers["Idempotent-Replayed"] == "true"
		if resp.StatusCode != want.Status || body.Error != want.Error || replayed != want.Replayed {
			t.Errorf("%s: got %d %q replayed=%v, want %d %q replayed=%v (body %s)",
				want.Event, resp.StatusCode, body.Error, replayed, want.Status, want.Error, want.Replayed, resp.Body)
		}
	}
	fn.Stop() // and wait for its output to be copied
	if !strings.Contains(logs.String(), `"idempotency_outcome":"replayed"`) {
		t.Errorf("the function's logs have no replay line:\n%s", logs.String())
	}
}

// TestFullPagesUnderTheRuntimeEmulator stores 28 events of 250 KB, every
// byte of their payload a character that the Lambda response escapes
// again, and pages through them with the default limit under the real
// runtime: each page must come back (the emulator refuses an answer over
// 6 MiB, and the runtime exits), and together they hold all 28.
func TestFullPagesUnderTheRuntimeEmulator(t *testing.T) {
	fn := startFunction(t, io.Discard)
	invoke := func(file string, change func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPResponse {
		t.Helper()
		return invokeChanged(t, fn, file, change)
	}
	const n = 28
	for range n {
		resp := invoke("post-fresh.json", func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers["idempotency-key"] = uuid.NewString()
			r.Body = `{"id":"` + uuid.NewString() + `","type":"t","occurredAt":"2026-12-02T14:03:00Z","payload":{"s":"` +
				strings.Repeat(`\"`, 125_000) + `"}}`
		})
		if resp.StatusCode != 201 {
			t.Fatalf("POST: %d %.300s", resp.StatusCode, resp.Body)
		}
	}
	seen, pages := 0, 0
	var cursor *string
	for {
		resp := invoke("get-page.json", func(r *events.APIGatewayV2HTTPRequest) {
			r.QueryStringParameters, r.RawQueryString = map[string]string{}, ""
			if cursor != nil {
				r.QueryStringParameters["cursor"] = *cursor
			}
		})
		var page struct {
			Events     []json.RawMessage
			NextCursor *string
		}
		if err := json.Unmarshal([]byte(resp.Body), &page); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET: %d %.300s", resp.StatusCode, resp.Body)
		}
		seen, pages, cursor = seen+len(page.Events), pages+1, page.NextCursor
		if cursor == nil {
			break
		}
	}
	if seen != n || pages < 2 {
		t.Fatalf("%d events on %d pages, want %d on several", seen, pages, n)
	}
}

// invokeChanged invokes fn with the API Gateway event of events/file, as
// change alters it, and wants an HTTP answer back.
func invokeChanged(t *testing.T, fn *rie.Function, file string, change func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPResponse {
	t.Helper()
	var req events.APIGatewayV2HTTPRequest
	raw, err := os.ReadFile("../../events/" + file)
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil {
		t.Fatal(err)
	}
	change(&req)
	event, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := fn.Invoke(ctx, event)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode == 0 {
		t.Fatalf("%s: not an HTTP answer: %.300s", file, out)
	}
	return resp
}

// TestLargestBatchUnderTheRuntimeEmulator sends a batch at its byte limit,
// every byte of its payloads a character the invocation's JSON escapes
// again (so the invocation carries about twice the body, against Lambda's
// 6 MB), through the real runtime, then pages through what it stored.
func TestLargestBatchUnderTheRuntimeEmulator(t *testing.T) {
	fn := startFunction(t, io.Discard)
	var parts []string
	body := func() string { return `{"events":[` + strings.Join(parts, ",") + `]}` }
	for len(body()) < api.MaxBatchBodyBytes-200_000 {
		parts = append(parts, `{"id":"`+uuid.NewString()+`","type":"t","occurredAt":"2026-12-02T14:03:00Z","payload":{"s":"`+
			strings.Repeat(`\"`, 95_000)+`"}}`)
	}
	if len(body()) > api.MaxBatchBodyBytes {
		t.Fatalf("a batch of %d bytes", len(body()))
	}
	resp := invokeChanged(t, fn, "post-batch.json", func(r *events.APIGatewayV2HTTPRequest) {
		r.Headers["idempotency-key"] = uuid.NewString()
		r.Body = body()
	})
	if resp.StatusCode != 201 {
		t.Fatalf("a batch of %d events, %d bytes: %d %.300s", len(parts), len(body()), resp.StatusCode, resp.Body)
	}
	seen, cursor := 0, ""
	for more := true; more; {
		resp := invokeChanged(t, fn, "get-page.json", func(r *events.APIGatewayV2HTTPRequest) {
			r.QueryStringParameters, r.RawQueryString = map[string]string{"limit": "1000"}, ""
			if cursor != "" {
				r.QueryStringParameters["cursor"] = cursor
			}
		})
		var page struct {
			Events  []json.RawMessage
			Cursor  string
			HasMore bool
		}
		if err := json.Unmarshal([]byte(resp.Body), &page); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET: %d %.300s", resp.StatusCode, resp.Body)
		}
		seen, cursor, more = seen+len(page.Events), page.Cursor, page.HasMore
	}
	if seen != len(parts) {
		t.Fatalf("listed %d events of the batch's %d", seen, len(parts))
	}
}
