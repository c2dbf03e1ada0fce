package api_test

import (
	"context"
	"testing"

	"github.com/sync-events/sync-events/functions/sync-events/apitest"
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
		// A fresh mutation's 2xx (201 stored or created, 200 removed or
		// deleted) commits one transaction; anything else, none.
		fresh := resp.StatusCode/100 == 2 && method != "GET" && resp.Headers["Idempotent-Replayed"] != "true"
		switch {
		case fresh && writes != 1:
			t.Fatalf("a fresh %d committed %d transactions, want 1", resp.StatusCode, writes)
		case !fresh && writes != 0:
			t.Fatalf("answered %d (replayed=%s) but committed %d transactions", resp.StatusCode, resp.Headers["Idempotent-Replayed"], writes)
		}
	})
}
