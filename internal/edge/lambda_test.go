package edge_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/edge"
)

// TestRequestFromRealEvents converts each API Gateway event of events/
// (the files make invoke sends, shaped as sam local generate-event's
// apigateway http-api-proxy) and checks that the request carries what
// the event said, and nothing it did not.
func TestRequestFromRealEvents(t *testing.T) {
	files, err := filepath.Glob("../../events/*.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("events/: %v, %v", files, err)
	}
	for _, file := range files {
		if filepath.Base(file) == "expected.json" {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			var ev events.APIGatewayV2HTTPRequest
			raw, err := os.ReadFile(file)
			if err == nil {
				err = json.Unmarshal(raw, &ev)
			}
			if err != nil {
				t.Fatal(err)
			}
			checkRequest(t, &ev, edge.Request(context.Background(), &ev))
		})
	}
}

func checkRequest(t *testing.T, ev *events.APIGatewayV2HTTPRequest, r *http.Request) {
	t.Helper()
	body, _ := io.ReadAll(r.Body)
	var sub string
	if a := ev.RequestContext.Authorizer; a != nil && a.JWT != nil {
		sub = a.JWT.Claims["sub"]
	}
	switch {
	case r.Method != ev.RequestContext.HTTP.Method:
		t.Errorf("method %q, event %q", r.Method, ev.RequestContext.HTTP.Method)
	case r.URL.RawPath != edge.RequestPath(ev) || r.URL.EscapedPath() != ev.RawPath:
		t.Errorf("path %q (%q), event %q", r.URL.RawPath, r.URL.EscapedPath(), ev.RawPath)
	case string(body) != ev.Body || edge.Base64Body(r.Context()) != ev.IsBase64Encoded:
		t.Errorf("body %q base64 %v, event %q %v", body, edge.Base64Body(r.Context()), ev.Body, ev.IsBase64Encoded)
	case edge.Caller(r.Context()) != sub:
		t.Errorf("caller %q, claims' sub %q", edge.Caller(r.Context()), sub)
	case edge.RequestID(r.Context()) != ev.RequestContext.RequestID:
		t.Errorf("request id %q, event %q", edge.RequestID(r.Context()), ev.RequestContext.RequestID)
	case r.Host != ev.RequestContext.DomainName:
		t.Errorf("host %q, event %q", r.Host, ev.RequestContext.DomainName)
	}
	for k, v := range ev.Headers {
		if got := r.Header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("header %s: %q, event %q", k, got, v)
		}
	}
	for k, v := range ev.QueryStringParameters {
		if got := r.URL.Query()[k]; len(got) != 1 || got[0] != v {
			t.Errorf("query %s: %q, event %q", k, got, v)
		}
	}
}

// TestServeAnswersAsTheHandlerWrote: status, headers (each one's values
// joined, as API Gateway's map holds them) and body, with nothing sniffed
// or added.
func TestServeAnswersAsTheHandlerWrote(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Allow", "GET")
		w.Header().Add("Allow", "POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
		io.WriteString(w, "<html>") //nolint:errcheck // a buffer
	})
	resp := edge.Serve(context.Background(), h, &events.APIGatewayV2HTTPRequest{RawPath: "/x"})
	if resp.StatusCode != 405 || resp.Body != "<html>" || len(resp.Headers) != 1 || resp.Headers["Allow"] != "GET, POST" || resp.IsBase64Encoded {
		t.Fatalf("%+v", resp)
	}
	if resp := edge.Serve(context.Background(), http.NotFoundHandler(), &events.APIGatewayV2HTTPRequest{}); resp.StatusCode != 404 {
		t.Fatalf("%+v", resp)
	}
}

// TestRequestKeepsAPathAsSent: a path that is not valid percent-encoding
// reaches the handler as sent, and a base64 body as its text.
func TestRequestKeepsAPathAsSent(t *testing.T) {
	ev := events.APIGatewayV2HTTPRequest{RawPath: "/a/%zz/b%2Fc", Body: base64.StdEncoding.EncodeToString([]byte("\xff")), IsBase64Encoded: true}
	r := edge.Request(context.Background(), &ev)
	body, _ := io.ReadAll(r.Body)
	if r.URL.RawPath != ev.RawPath || string(body) != ev.Body || !edge.Base64Body(r.Context()) || edge.Caller(r.Context()) != "" {
		t.Fatalf("path %q (%q), body %q", r.URL.RawPath, r.URL.Path, body)
	}
}
