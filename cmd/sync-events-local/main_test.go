package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sync-events/sync-events/internal/cors"
)

func runWith(t *testing.T, env map[string]string) error {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return run(ctx, slog.New(slog.DiscardHandler))
}

// TestRefusesToListenBeyondLoopback: with no ALLOW_NON_LOOPBACK, an ADDR on
// every interface or a LAN address stops start-up before anything runs.
func TestRefusesToListenBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		err := runWith(t, map[string]string{"ADDR": addr, "ALLOW_NON_LOOPBACK": ""})
		if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
			t.Errorf("ADDR %s: %v", addr, err)
		}
	}
}

// TestRefusesAnEndpointInAWS: DynamoDB in AWS is refused before any client
// is built, so made-up tokens never meet real tables.
func TestRefusesAnEndpointInAWS(t *testing.T) {
	err := runWith(t, map[string]string{"ADDR": "127.0.0.1:0", "DYNAMODB_ENDPOINT": "https://dynamodb.eu-west-1.amazonaws.com"})
	if err == nil || !strings.Contains(err.Error(), "is in AWS") {
		t.Fatalf("got %v", err)
	}
}

// TestNeverSignsWithRealCredentials: credentials in the environment, and an
// endpoint the dev server cannot tell from AWS (a name or address that
// could lead there). The request it sends is signed with the fixed local
// credentials, never the real key.
func TestNeverSignsWithRealCredentials(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(400)
		w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#UnrecognizedClientException","message":"refused"}`))
	}))
	defer fake.Close()
	err := runWith(t, map[string]string{
		"ADDR": "127.0.0.1:0", "DYNAMODB_ENDPOINT": fake.URL,
		"AWS_ACCESS_KEY_ID": "AKIAEXAMPLEREALKEY", "AWS_SECRET_ACCESS_KEY": "real-secret", "AWS_SESSION_TOKEN": "real-session",
	})
	mu.Lock()
	defer mu.Unlock()
	if err == nil || len(auth) == 0 {
		t.Fatalf("run: %v after %d requests", err, len(auth))
	}
	for _, a := range auth {
		if strings.Contains(a, "AKIAEXAMPLEREALKEY") || !strings.Contains(a, "Credential=local/") {
			t.Fatalf("signed with %q", a)
		}
	}
}

// TestServesOnlyItsOwnHost: the handler run serves refuses a request for
// another host (a DNS-rebinding page), even from an allowed origin, before
// CORS, the API or the live channel see it.
func TestServesOnlyItsOwnHost(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"events":[]}`)) })
	live := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"events":["live"]}`)) })
	h := serving("127.0.0.1:3000", cors.ParseOrigins(""), api, live)
	for _, path := range []string{"/api/v1/sync/events", "/event/realtime", "/event"} {
		for host, want := range map[string]int{"evil.example:3000": http.StatusMisdirectedRequest, "127.0.0.1:3000": 200, "localhost:3000": 200} {
			req := httptest.NewRequest("GET", path, nil)
			req.Host = host
			req.Header.Set("Origin", "http://localhost:5173")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != want || (want != 200 && (strings.Contains(rec.Body.String(), "events") || rec.Header().Get("Access-Control-Allow-Origin") != "")) {
				t.Errorf("%s, Host %s: %d %s %v", path, host, rec.Code, rec.Body, rec.Header())
			}
			if wantLive := strings.HasPrefix(path, "/event") && want == 200; wantLive != strings.Contains(rec.Body.String(), "live") {
				t.Errorf("%s, Host %s: served by the live channel %v, want %v", path, host, !wantLive, wantLive)
			}
		}
	}
}
