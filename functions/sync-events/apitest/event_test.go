package apitest_test

import (
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/local/devserver"
)

func TestEventIsWhatAPIGatewaySends(t *testing.T) {
	req := httptest.NewRequest("POST", "/api/v1/sync/events?limit=5&tag=a&tag=b", strings.NewReader("\xff\x00binary"))
	req.Header.Add("X-Multi", "one")
	req.Header.Add("X-Multi", "two")
	req.Header.Set("Authorization", "Bearer "+devserver.UnsignedToken(map[string]any{"sub": "u-1", "n": 5, "flag": true}))
	ev, err := apitest.Event(req)
	if err != nil {
		t.Fatal(err)
	}
	claims := ev.RequestContext.Authorizer.JWT.Claims
	switch {
	case ev.Version != "2.0" || ev.RawPath != "/api/v1/sync/events" || ev.RequestContext.HTTP.Method != "POST":
		t.Fatalf("event %+v", ev)
	case ev.Headers["x-multi"] != "one,two" || ev.QueryStringParameters["tag"] != "a,b" || ev.QueryStringParameters["limit"] != "5":
		t.Fatalf("headers %v, query %v", ev.Headers, ev.QueryStringParameters)
	case claims["sub"] != "u-1" || claims["n"] != "5" || claims["flag"] != "true":
		t.Fatalf("claims %v", claims)
	case !ev.IsBase64Encoded || ev.Body != base64.StdEncoding.EncodeToString([]byte("\xff\x00binary")):
		t.Fatalf("body %q base64=%v", ev.Body, ev.IsBase64Encoded)
	}
}
