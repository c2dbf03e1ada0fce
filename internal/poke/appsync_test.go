package poke_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sync-events/sync-events/internal/poke"
)

// TestAppSyncPublishesOnePOSTPerPokeAsTheEventAPIDocuments holds the
// publisher to the HTTP publish request of
// https://docs.aws.amazon.com/appsync/latest/eventapi/publish-http.html:
// POST /event, {"channel", "events": [<JSON strings>]}, SigV4 for the
// service appsync; an answer naming a failed event, or a refusal, is an
// error.
func TestAppSyncPublishesOnePOSTPerPokeAsTheEventAPIDocuments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  func(w http.ResponseWriter)
		wantErr bool
	}{
		{"accepted", func(w http.ResponseWriter) {
			io.WriteString(w, `{"failed":[],"successful":[{"identifier":"x","index":0}]}`)
		}, false},
		{"an event failed", func(w http.ResponseWriter) {
			io.WriteString(w, `{"failed":[{"identifier":"x","index":0,"code":401,"message":"not allowed on /users/a"}],"successful":[]}`)
		}, true},
		{"refused", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"errors":[{"errorType":"UnauthorizedException","message":"no publish on /users/b"}]}`)
		}, true},
		{"throttled", func(w http.ResponseWriter) { w.WriteHeader(http.StatusTooManyRequests) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			channels := map[string]string{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body struct {
					Channel string   `json:"channel"`
					Events  []string `json:"events"`
				}
				auth := r.Header.Get("Authorization")
				if r.Method != http.MethodPost || r.URL.Path != "/event" || json.NewDecoder(r.Body).Decode(&body) != nil || len(body.Events) != 1 ||
					!strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDPOKE/") || !strings.Contains(auth, "/us-west-2/appsync/aws4_request") ||
					!strings.Contains(auth, "host") || r.Header.Get("X-Amz-Date") == "" || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("request %s %s %q %+v", r.Method, r.URL.Path, auth, body)
				}
				mu.Lock()
				channels[body.Channel] = body.Events[0]
				mu.Unlock()
				tc.answer(w)
			}))
			defer srv.Close()
			pub := &poke.AppSync{Endpoint: srv.URL + "/event", Region: "us-west-2", Credentials: credentials.NewStaticCredentialsProvider("AKIDPOKE", "secret", "")}
			pokes := []poke.Poke{{Channel: "/users/a", Cursor: "p0000000000000001"}, {Channel: "/users/b", Cursor: "p0000000000000002"}}
			err := pub.Publish(context.Background(), pokes)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			// The error is logged: no channel (a user id), none of the
			// answer's body.
			if err != nil && (strings.Contains(err.Error(), "/users/") || strings.Contains(err.Error(), "message")) {
				t.Errorf("the error holds a channel or the answer: %v", err)
			}
			for _, p := range pokes {
				var ev struct{ Cursor string }
				if json.Unmarshal([]byte(channels[p.Channel]), &ev) != nil || ev.Cursor != p.Cursor {
					t.Errorf("%s got %q", p.Channel, channels[p.Channel])
				}
			}
		})
	}
}
