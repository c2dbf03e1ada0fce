package api

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FuzzHandler: any method, key, content type and body, plain or base64:
// never a panic, never a 5xx (no fault is injected), and never a write for a
// request that is not answered 201.
func FuzzHandler(f *testing.F) {
	hs := newHarness(f)
	count := func() int32 {
		var n int32
		for _, table := range []string{hs.b.Tables.Ledger, hs.b.Tables.Events} {
			out, err := hs.b.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), Select: types.SelectCount})
			if err != nil {
				f.Fatal(err)
			}
			n += out.Count
		}
		return n
	}
	f.Fuzz(func(t *testing.T, method, path, key, contentType string, body []byte, base64 bool) {
		req := apiRequest(method, "fuzzer", key, string(body))
		req.RawPath = path
		req.Headers["content-type"] = contentType
		req.IsBase64Encoded = base64
		before := count()
		resp, err := hs.h.Handle(context.Background(), req)
		if err != nil || resp.StatusCode >= 500 {
			t.Fatalf("%d %s, %v", resp.StatusCode, resp.Body, err)
		}
		if after := count(); resp.StatusCode != 201 && after != before {
			t.Fatalf("answered %d but wrote %d items", resp.StatusCode, after-before)
		}
	})
}
