package api_test

import (
	"context"
	"testing"

	"github.com/sync-events/sync-events/internal/apitest"
)

// FuzzHandler: any method, path, key, content type, extra header and body,
// plain or base64: never a panic, never a 5xx (no fault is injected), and
// never a write for a request that is not answered 201. A write is a
// TransactWriteItems that DynamoDB answered 200, counted at the transport,
// which keeps each run cheap as the tables grow.
func FuzzHandler(f *testing.F) {
	hs := apitest.New(f)
	f.Fuzz(func(t *testing.T, method, path, key, contentType, headerName, headerValue string, body []byte, base64 bool) {
		req := apitest.Request(method, "fuzzer", key, string(body))
		req.RawPath = path
		req.Headers["content-type"] = contentType
		if headerName != "" {
			req.Headers[headerName] = headerValue
		}
		req.IsBase64Encoded = base64
		before := hs.B.Transport.Succeeded("TransactWriteItems")
		resp, err := hs.H.Handle(context.Background(), req)
		if err != nil || resp.StatusCode >= 500 {
			t.Fatalf("%d %s, %v", resp.StatusCode, resp.Body, err)
		}
		apitest.CheckContract(t, req, resp)
		writes := hs.B.Transport.Succeeded("TransactWriteItems") - before
		switch {
		case resp.StatusCode == 201 && resp.Headers["Idempotent-Replayed"] != "true" && writes != 1:
			t.Fatalf("a fresh 201 committed %d transactions, want 1", writes)
		case (resp.StatusCode != 201 || resp.Headers["Idempotent-Replayed"] == "true") && writes != 0:
			t.Fatalf("answered %d (replayed=%s) but committed %d transactions", resp.StatusCode, resp.Headers["Idempotent-Replayed"], writes)
		}
	})
}
