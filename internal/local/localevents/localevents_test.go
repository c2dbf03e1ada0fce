package localevents_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sync-events/sync-events/internal/local/devserver"
	"github.com/sync-events/sync-events/internal/local/localevents"
	"github.com/sync-events/sync-events/internal/local/localevents/localeventstest"
	"github.com/sync-events/sync-events/internal/poke"
)

func start(t *testing.T) (*localevents.Server, *httptest.Server) {
	t.Helper()
	ev := localevents.New(localevents.Options{
		Subject: devserver.BearerSubject, Allowed: poke.MaySubscribe,
		AllowOrigin: func(o string) bool { return o == "http://localhost:5173" },
	})
	srv := httptest.NewServer(ev)
	t.Cleanup(func() { ev.Close(); srv.Close() })
	return ev, srv
}

func token(sub string) string { return devserver.UnsignedToken(map[string]any{"sub": sub}) }

// TestSubscribeFollowsTheOnSubscribeCases runs the cases the template's
// handler is held to through the protocol.
func TestSubscribeFollowsTheOnSubscribeCases(t *testing.T) {
	_, srv := start(t)
	raw, err := os.ReadFile("../../poke/testdata/subscribe-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Why, Sub, Channel string
		Allowed           bool
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Sub == "" {
			continue // no connection without a subject: TestRefusesWhatMustNotPass
		}
		cn := localeventstest.Dial(t, srv.URL, token(c.Sub))
		got := cn.Subscribe("s1", c.Channel, map[string]string{"Authorization": token(c.Sub)})
		if (got.Type == "subscribe_success") != c.Allowed || got.ID != "s1" {
			t.Errorf("%s: %+v, want allowed %v", c.Why, got, c.Allowed)
		}
	}
}

// TestRefusesWhatMustNotPass, from the side of someone who must not.
func TestRefusesWhatMustNotPass(t *testing.T) {
	ev, srv := start(t)
	alice, mallory := token("alice"), token("mallory")

	// No authorization, or a page of a site the policy does not allow.
	for name, opts := range map[string]*websocket.DialOptions{
		"no header subprotocol": {Subprotocols: []string{localevents.Subprotocol}},
		"a token without sub":   {Subprotocols: []string{localevents.Subprotocol, "header-" + base64.RawURLEncoding.EncodeToString([]byte(`{"Authorization":"`+devserver.UnsignedToken(map[string]any{"name": "x"})+`"}`))}},
		"another site's page": {Subprotocols: []string{localevents.Subprotocol, "header-" + base64.RawURLEncoding.EncodeToString([]byte(`{"Authorization":"`+alice+`"}`))},
			HTTPHeader: http.Header{"Origin": {"https://evil.example"}}},
	} {
		if c, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http")+localevents.RealtimePath, opts); err == nil || resp == nil || resp.StatusCode < 400 {
			if c != nil {
				c.CloseNow()
			}
			t.Errorf("%s: connected (%v)", name, resp)
		}
	}

	victim := localeventstest.Dial(t, srv.URL, alice)
	if m := victim.Subscribe("v1", "/users/alice", map[string]string{"Authorization": alice}); m.Type != "subscribe_success" {
		t.Fatalf("alice's own channel: %+v", m)
	}
	intruder := localeventstest.Dial(t, srv.URL, mallory)
	for name, tc := range map[string]struct {
		channel string
		auth    map[string]string
	}{
		"alice's channel under mallory's token":                        {"/users/alice", map[string]string{"Authorization": mallory}},
		"alice's channel under alice's token, on mallory's connection": {"/users/alice", map[string]string{"Authorization": alice}},
		"mallory's channel under alice's token":                        {"/users/mallory", map[string]string{"Authorization": alice}},
		"no authorization in the subscribe":                            {"/users/mallory", nil},
		"the wildcard":                                                 {"/users/*", map[string]string{"Authorization": mallory}},
	} {
		if m := intruder.Subscribe("i-"+strings.ReplaceAll(name[:7], " ", "-"), tc.channel, tc.auth); m.Type != "subscribe_error" {
			t.Errorf("%s: %+v", name, m)
		}
	}
	// An id taken twice, and another connection's id to unsubscribe.
	if m := intruder.Subscribe("m1", "/users/mallory", map[string]string{"Authorization": mallory}); m.Type != "subscribe_success" {
		t.Fatalf("mallory's own channel: %+v", m)
	}
	if m := intruder.Subscribe("m1", "/users/mallory", map[string]string{"Authorization": mallory}); m.Type != "subscribe_error" {
		t.Errorf("a duplicated id: %+v", m)
	}
	intruder.Send(map[string]any{"type": "unsubscribe", "id": "v1"})
	if m := intruder.Read(time.Second); m.Type != "unsubscribe_error" {
		t.Errorf("unsubscribing alice's subscription: %+v", m)
	}
	// Publishing is IAM's, never a token's.
	intruder.Send(map[string]any{"type": "publish", "id": "p1", "channel": "/users/alice", "events": []string{`{"cursor":"x"}`}})
	if m := intruder.Read(time.Second); m.Type != "publish_error" {
		t.Errorf("a publish over the socket: %+v", m)
	}
	for name, req := range map[string]func() *http.Request{
		"a page's form post": func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, srv.URL+localevents.PublishPath, strings.NewReader(`{"channel":"/users/alice","events":["1"]}`))
			r.Header.Set("Content-Type", "text/plain")
			r.Header.Set("Origin", "https://evil.example")
			return r
		},
		"text/plain, no origin": func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, srv.URL+localevents.PublishPath, strings.NewReader(`{"channel":"/users/alice","events":["1"]}`))
			r.Header.Set("Content-Type", "text/plain")
			return r
		},
	} {
		resp, err := http.DefaultClient.Do(req())
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %v %v", name, resp, err)
		}
	}

	// What passes: the publisher's POST reaches alice's subscription, and
	// alice's only.
	r, _ := http.NewRequest(http.MethodPost, srv.URL+localevents.PublishPath, strings.NewReader(`{"channel":"/users/alice","events":["{\"cursor\":\"p0000000000000001\"}"]}`))
	r.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("publish: %v %v", resp, err)
	}
	if m := victim.Read(time.Second); m.Type != "data" || m.ID != "v1" || m.Event != `{"cursor":"p0000000000000001"}` {
		t.Errorf("alice got %+v", m)
	}
	if m, ok := intruder.Next(100 * time.Millisecond); ok {
		t.Errorf("mallory got %+v", m)
	}

	// Close ends every connection.
	ev.Close()
	began := time.Now()
	if _, ok := victim.Next(2 * time.Second); ok || time.Since(began) > time.Second {
		t.Error("a connection outlived Close")
	}
}
