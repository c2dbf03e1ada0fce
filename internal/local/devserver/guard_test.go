package devserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/sync-events/sync-events/internal/local/devserver"
)

// TestHostGuardRefusesOtherHosts is DNS rebinding from the attacker's side:
// a page on evil.example whose name now resolves to 127.0.0.1 sends
// Host: evil.example, and must get nothing but the 421.
func TestHostGuardRefusesOtherHosts(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) })
	cases := []struct {
		listen, host string
		pass         bool
	}{
		{"127.0.0.1:3000", "127.0.0.1:3000", true},
		{"127.0.0.1:3000", "localhost:3000", true},
		{"127.0.0.1:3000", "LOCALHOST.", true},
		{"127.0.0.1:3000", "app.localhost:3000", true},
		{"127.0.0.1:3000", "[::1]:3000", true},
		{"127.0.0.1:3000", "127.0.0.2", true},
		{"127.0.0.1:3000", "evil.example", false},
		{"127.0.0.1:3000", "evil.example:3000", false},
		{"127.0.0.1:3000", "127.0.0.1.evil.example", false},
		{"127.0.0.1:3000", "localhost.evil.example", false},
		{"127.0.0.1:3000", "evillocalhost:3000", false},
		{"127.0.0.1:3000", "192.168.1.20:3000", false},
		{"127.0.0.1:3000", "", false},
		// Listening elsewhere, by ALLOW_NON_LOOPBACK: that address, and IPs
		// when it listens on all of them; still no other name.
		{"192.168.1.20:3000", "192.168.1.20:3000", true},
		{"192.168.1.20:3000", "192.168.1.21:3000", false},
		{"192.168.1.20:3000", "evil.example", false},
		{"devbox.lan:3000", "devbox.lan:3000", true},
		{"0.0.0.0:3000", "10.0.0.7:3000", true},
		{"0.0.0.0:3000", "evil.example:3000", false},
		{":3000", "[fd00::7]:3000", true},
		{":3000", "evil.example", false},
	}
	for _, tc := range cases {
		req := httptest.NewRequest("GET", "/api/v1/sync/events", nil)
		req.Host = tc.host
		rec := httptest.NewRecorder()
		devserver.HostGuard(tc.listen, ok).ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Body)
		switch {
		case tc.pass && (rec.Code != 200 || string(body) != "served"):
			t.Errorf("listen %s, Host %q: %d %s, want it served", tc.listen, tc.host, rec.Code, body)
		case !tc.pass && (rec.Code != http.StatusMisdirectedRequest || rec.Header().Get("Content-Type") != "application/json" ||
			!strings.HasPrefix(string(body), `{"error":"HOST_NOT_ALLOWED","message":"`) || strings.Contains(string(body), "served")):
			t.Errorf("listen %s, Host %q: %d %s %v, want the 421", tc.listen, tc.host, rec.Code, body, rec.Header())
		case !tc.pass && tc.host != "" && strings.Contains(string(body), tc.host):
			t.Errorf("the 421 echoes the Host: %s", body)
		}
	}
}

func TestListenAddrIsLoopbackUnlessAllowed(t *testing.T) {
	for addr, loopback := range map[string]bool{
		"127.0.0.1:3000": true, "localhost:3000": true, "[::1]:3000": true, "127.0.0.1:0": true,
		"0.0.0.0:3000": false, ":3000": false, "[::]:3000": false, "192.168.1.20:3000": false, "devbox.lan:3000": false,
	} {
		if err := devserver.CheckListenAddr(addr, false); (err == nil) != loopback {
			t.Errorf("ADDR %s: %v", addr, err)
		} else if err != nil && !strings.Contains(err.Error(), devserver.EnvAllowNonLoopback+"=1") {
			t.Errorf("ADDR %s: the refusal does not say how to allow it: %v", addr, err)
		}
		if err := devserver.CheckListenAddr(addr, true); err != nil {
			t.Errorf("ADDR %s allowed: %v", addr, err)
		}
	}
	if err := devserver.CheckListenAddr("3000", false); err == nil {
		t.Error("an ADDR without a port passed")
	}
	for v, want := range map[string]bool{"": false, "1": true} {
		if got, err := devserver.AllowNonLoopback(v); err != nil || got != want {
			t.Errorf("%s=%q: %v %v", devserver.EnvAllowNonLoopback, v, got, err)
		}
	}
	for _, v := range []string{"0", "true", "yes", "false"} {
		if _, err := devserver.AllowNonLoopback(v); err == nil {
			t.Errorf("%s=%q was read as a yes or no", devserver.EnvAllowNonLoopback, v)
		}
	}
}

// TestEndpointInAWSIsRefused: every spelling of a DynamoDB endpoint in AWS
// is refused; local ones pass.
func TestEndpointInAWSIsRefused(t *testing.T) {
	for _, e := range []string{
		"https://dynamodb.us-east-1.amazonaws.com",
		"http://dynamodb.us-east-1.amazonaws.com",
		"https://DYNAMODB.EU-WEST-1.AMAZONAWS.COM.:443/",
		"https://dynamodb-fips.us-gov-west-1.amazonaws.com",
		"https://dynamodb.cn-north-1.amazonaws.com.cn",
		"https://dynamodb.eu-west-1.api.aws",
		"https://vpce-0123-abcd.dynamodb.eu-west-1.vpce.amazonaws.com",
		"https://amazonaws.com",
	} {
		if err := devserver.CheckEndpoint(e); err == nil || !strings.Contains(err.Error(), "in AWS") {
			t.Errorf("%s: %v", e, err)
		}
	}
	for _, e := range []string{"", "http://127.0.0.1:8000", "http://localhost:8000", "http://dynamodb-local:8000",
		"http://host.docker.internal:8000", "http://notamazonaws.com:8000", "http://amazonaws.com.example:8000"} {
		if err := devserver.CheckEndpoint(e); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
}

func TestDropAWSCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEREALKEY")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "real-secret")
	t.Setenv("AWS_SESSION_TOKEN", "real-session")
	if dropped, err := devserver.DropAWSCredentials(); err != nil || !dropped {
		t.Fatalf("dropped %v, %v", dropped, err)
	}
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		if _, ok := os.LookupEnv(v); ok {
			t.Errorf("%s is still set", v)
		}
	}
	if dropped, _ := devserver.DropAWSCredentials(); dropped {
		t.Error("dropped credentials that were not there")
	}
}
