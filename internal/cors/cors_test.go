package cors_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sync-events/sync-events/internal/cors"
)

func TestOriginsAllowed(t *testing.T) {
	for _, tc := range []struct {
		list, origin string
		want         bool
	}{
		{"", "http://localhost:5173", true},
		{"", "https://localhost", true},
		{"", "http://127.0.0.1:8080", true},
		{"", "http://localhost.example.com", false},
		{"", "http://192.168.1.20:5173", false},
		{"", "file://", false},
		{"", "null", false},
		{"", "", false},
		{"http://192.168.1.20:5173", "http://192.168.1.20:5173", true},
		{"https://a.example.com, https://b.example.com/", "https://b.example.com", true},
		{"https://a.example.com", "https://a.example.com:444", false},
		{"*", "https://anything.example.org", true},
	} {
		if got := cors.ParseOrigins(tc.list).Allows(tc.origin); got != tc.want {
			t.Errorf("origins %q allow %q: %v, want %v", tc.list, tc.origin, got, tc.want)
		}
	}
}

// An integration that sets its own CORS headers, which API Gateway ignores.
var integration = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "https://evil.example.com")
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(http.StatusCreated)
})

func TestWrapAnswersAsAPIGateway(t *testing.T) {
	h := cors.API.Wrap(cors.ParseOrigins("https://app.example.com"), integration)
	for _, tc := range []struct {
		name, method, origin, requestMethod string
		status                              int
		want                                map[string]string // "" for a header that must be absent
	}{
		{"preflight, allowed", "OPTIONS", "http://localhost:5173", "POST", 204, map[string]string{
			"Access-Control-Allow-Origin":   "http://localhost:5173",
			"Access-Control-Allow-Methods":  "GET,POST,DELETE",
			"Access-Control-Allow-Headers":  "authorization,content-type,idempotency-key",
			"Access-Control-Max-Age":        "600",
			"Access-Control-Expose-Headers": "",
		}},
		{"preflight, configured origin", "OPTIONS", "https://app.example.com", "GET", 204, map[string]string{
			"Access-Control-Allow-Origin": "https://app.example.com",
		}},
		{"preflight, other origin", "OPTIONS", "https://other.example.com", "POST", 204, map[string]string{
			"Access-Control-Allow-Origin":  "",
			"Access-Control-Allow-Methods": "",
		}},
		{"OPTIONS that is no preflight reaches the integration", "OPTIONS", "http://localhost:5173", "", 201, map[string]string{
			"Access-Control-Allow-Origin": "http://localhost:5173",
		}},
		{"request, allowed", "POST", "http://localhost:5173", "", 201, map[string]string{
			"Access-Control-Allow-Origin":   "http://localhost:5173",
			"Access-Control-Expose-Headers": "idempotent-replayed,retry-after",
			"Idempotent-Replayed":           "true",
			"Access-Control-Allow-Methods":  "",
		}},
		{"request, other origin: the integration's CORS header dropped", "POST", "https://other.example.com", "", 201, map[string]string{
			"Access-Control-Allow-Origin":   "",
			"Access-Control-Expose-Headers": "",
		}},
		{"request without Origin", "GET", "", "", 201, map[string]string{
			"Access-Control-Allow-Origin": "",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "/api/v1/sync/events", nil)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.requestMethod != "" {
				r.Header.Set("Access-Control-Request-Method", tc.requestMethod)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d", w.Code, tc.status)
			}
			for k, v := range tc.want {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}
