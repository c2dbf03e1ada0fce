package api_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
)

// TestRoutingAnswers pins what the route table answers around its
// routes, whatever matches paths: the most literal route wins across
// methods, as in API Gateway (…/events/batch is the batch's path alone,
// never an event id of DELETE …/events/{eventId}); a path is matched
// segment by segment as sent, percent-encoding and dots included; a
// path no route has is a 404, and a method its routes do not take a 405
// whose Allow lists theirs.
func TestRoutingAnswers(t *testing.T) {
	hs := apitest.New(t)
	space := "/api/v1/spaces/" + uuid.NewString()
	nf, na, v := string(errcode.NotFound), string(errcode.MethodNotAllowed), string(errcode.ValidationFailed)
	for _, tc := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"DELETE", "/api/v1/sync/events/batch", 405, na, "POST"},
		{"GET", "/api/v1/sync/events/batch", 405, na, "POST"},
		{"DELETE", space + "/events/batch", 405, na, "POST"},
		{"GET", space + "/members", 405, na, "POST"},
		{"GET", space + "/members/bob", 405, na, "DELETE"},
		{"HEAD", "/api/v1/spaces", 405, na, "GET, POST"},
		{"PUT", space + "/events", 405, na, "GET, POST"},
		{"DELETE", "/api/v1/sync/events/..", 400, v, ""},
		{"DELETE", "/api/v1/sync/events/%2E%2E", 400, v, ""},
		{"GET", "/api/v1/sync/%65vents", 404, nf, ""},
		{"GET", "/api/v1//sync/events", 404, nf, ""},
		{"GET", "/api/v1/sync/events/", 404, nf, ""},
		{"DELETE", "/api/v1/sync/events/", 404, nf, ""},
		{"GET", "/api/v1/spaces/" + uuid.NewString() + "/members/bob/x", 404, nf, ""},
		{"GET", "/api/v1/sync", 404, nf, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp := hs.Call(tc.method, tc.path, "alice", uuid.NewString(), "")
			apitest.WantResponse(t, resp, tc.status, tc.code)
			if resp.Headers["Allow"] != tc.allow {
				t.Fatalf("Allow %q, want %q", resp.Headers["Allow"], tc.allow)
			}
		})
	}
}
