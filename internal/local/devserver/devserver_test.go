package devserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/local/devserver"
)

// serve is the real handler, on fresh tables of the test backend, behind
// the dev server's HTTP adapter (not its Host guard or CORS, which have
// tests of their own).
func serve(t *testing.T) *httptest.Server {
	t.Helper()
	b := ddbtest.Start(t)
	cfg := config.Defaults()
	cfg.IdempotencyTable, cfg.EventsTable = b.Tables.Ledger, b.Tables.Events
	h := api.Wire(b.Client, cfg, api.Output{Log: slog.New(slog.DiscardHandler)})
	return httptest.NewServer(devserver.Handler(h))
}

func token(claims map[string]any) string {
	return "Bearer " + devserver.UnsignedToken(claims)
}

// TestDevServerServesTheRealHandler is `make run` in miniature: plain HTTP
// in, the bearer token's sub as the caller, the API's answer back out.
func TestDevServerServesTheRealHandler(t *testing.T) {
	srv := serve(t)
	defer srv.Close()

	key, id := uuid.NewString(), uuid.NewString()
	body := `{"id":"` + id + `","type":"note.created","occurredAt":"2026-12-02T14:03:00Z","payload":{"n":1}}`
	send := func(method, auth, key, body string) (*http.Response, string) {
		req, _ := http.NewRequest(method, srv.URL+api.EventsPath, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	alice := token(map[string]any{"sub": "alice", "exp": 1796222600})
	first, firstBody := send("POST", alice, key, body)
	again, againBody := send("POST", alice, key, body)
	if first.StatusCode != 201 || again.StatusCode != 201 || firstBody != againBody || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("got %d %s then %d %s %v", first.StatusCode, firstBody, again.StatusCode, againBody, again.Header)
	}
	if r, b := send("POST", "", uuid.NewString(), body); r.StatusCode != 401 {
		t.Fatalf("no token: %d %s", r.StatusCode, b)
	}
	if r, b := send("POST", "Bearer not-a-jwt", uuid.NewString(), body); r.StatusCode != 401 {
		t.Fatalf("bad token: %d %s", r.StatusCode, b)
	}
	if r, b := send("GET", alice, "", ""); r.StatusCode != 200 || !strings.Contains(b, id) {
		t.Fatalf("list: %d %s", r.StatusCode, b)
	}
	if r, b := send("GET", token(map[string]any{"sub": "bob"}), "", ""); r.StatusCode != 200 || strings.Contains(b, id) {
		t.Fatalf("bob's list: %d %s", r.StatusCode, b)
	}
}
