package devserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
)

// TestBadRequestsDoNotEchoTheBody sends bodies whose fault is a member name,
// a string, a number or bytes that carry a marker, through the real handler
// over HTTP, and checks each 400 says nothing of the marker: the JSON
// library's text quotes such input, and an answer never echoes it.
func TestBadRequestsDoNotEchoTheBody(t *testing.T) {
	srv := serve(t)
	defer srv.Close()

	const marker = "zqEchoMarker"
	event := func(extra string) string {
		return `{"id":"` + uuid.NewString() + `","type":"note.created","occurredAt":"2026-12-02T14:03:00Z","payload":{"n":1}` + extra + `}`
	}
	cases := []struct{ name, path, body string }{
		{"unknown member", api.EventsPath, event(`,"` + marker + `":1`)},
		{"duplicate member", api.EventsPath, `{"` + marker + `":1,"` + marker + `":2}`},
		{"bare word", api.EventsPath, `{"id":` + marker + `}`},
		{"trailing garbage", api.EventsPath, event("") + " " + marker},
		{"unpaired surrogate", api.EventsPath, `{"payload":{"a":"\ud800` + marker + `"}}`},
		{"control character", api.EventsPath, `{"` + marker + `":"a` + "\x01" + `"}`},
		{"number out of range", api.EventsPath, `{"payload":{"a":1.` + "918273645546372819" + `e999}}`},
		{"a member's wrong type", api.EventsPath, `{"id":{"` + marker + `":1},"type":"t","occurredAt":"2026-12-02T14:03:00Z","payload":{}}`},
		{"batch event's unknown member", api.EventsPath + "/batch", `{"events":[` + event(`,"`+marker+`":1`) + `]}`},
		{"batch's unknown member", api.EventsPath + "/batch", `{"events":[` + event("") + `],"` + marker + `":1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", token(map[string]any{"sub": "alice"}))
			req.Header.Set("Idempotency-Key", uuid.NewString())
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			switch {
			case resp.StatusCode != 400 || !strings.Contains(string(got), `"VALIDATION_FAILED"`):
				t.Fatalf("%d %s", resp.StatusCode, got)
			case strings.Contains(string(got), marker), strings.Contains(string(got), "918273645546372819"):
				t.Fatalf("the answer echoes the body: %s", got)
			}
		})
	}
}
