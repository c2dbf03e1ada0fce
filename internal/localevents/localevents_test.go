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

	"github.com/sync-events/sync-events/internal/devserver"
	"github.com/sync-events/sync-events/internal/localevents"
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

type msg struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Event  string `json:"event"`
	Errors []struct {
		ErrorType string `json:"errorType"`
	} `json:"errors"`
}

type conn struct {
	t *testing.T
	c *websocket.Conn
}

func token(sub string) string { return devserver.UnsignedToken(map[string]any{"sub": sub}) }

// dial connects as a device does: the token in the header subprotocol,
// then connection_init and its ack.
func dial(t *testing.T, srv *httptest.Server, tok string) *conn {
	t.Helper()
	header, _ := json.Marshal(map[string]string{"host": "h", "Authorization": tok})
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http")+localevents.RealtimePath, &websocket.DialOptions{
		Subprotocols: []string{localevents.Subprotocol, "header-" + base64.RawURLEncoding.EncodeToString(header)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	cn := &conn{t, c}
	cn.send(map[string]any{"type": "connection_init"})
	if m := cn.read(); m.Type != "connection_ack" {
		t.Fatalf("after connection_init: %+v", m)
	}
	return cn
}

func (cn *conn) send(m any) {
	b, _ := json.Marshal(m)
	if err := cn.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		cn.t.Fatal(err)
	}
}

func (cn *conn) read() msg {
	cn.t.Helper()
	m, ok := cn.tryRead(time.Second)
	if !ok {
		cn.t.Fatal("no message within a second")
	}
	return m
}

func (cn *conn) tryRead(within time.Duration) (msg, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	_, b, err := cn.c.Read(ctx)
	if err != nil {
		return msg{}, false
	}
	var m msg
	json.Unmarshal(b, &m) //nolint:errcheck // a bad message fails the expectations
	return m, true
}

func (cn *conn) subscribe(id, channel string, auth map[string]string) msg {
	cn.t.Helper()
	m := map[string]any{"type": "subscribe", "id": id, "channel": channel}
	if auth != nil {
		m["authorization"] = auth
	}
	cn.send(m)
	return cn.read()
}

// TestSubscribeFollowsTheOnSubscribeCases runs the cases the template's
// handler is held to through the protocol.
func TestSubscribeFollowsTheOnSubscribeCases(t *testing.T) {
	_, srv := start(t)
	raw, err := os.ReadFile("../poke/testdata/subscribe-cases.json")
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
		cn := dial(t, srv, token(c.Sub))
		got := cn.subscribe("s1", c.Channel, map[string]string{"Authorization": token(c.Sub)})
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

	victim := dial(t, srv, alice)
	if m := victim.subscribe("v1", "/users/alice", map[string]string{"Authorization": alice}); m.Type != "subscribe_success" {
		t.Fatalf("alice's own channel: %+v", m)
	}
	intruder := dial(t, srv, mallory)
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
		if m := intruder.subscribe("i-"+strings.ReplaceAll(name[:7], " ", "-"), tc.channel, tc.auth); m.Type != "subscribe_error" {
			t.Errorf("%s: %+v", name, m)
		}
	}
	// An id taken twice, and another connection's id to unsubscribe.
	if m := intruder.subscribe("m1", "/users/mallory", map[string]string{"Authorization": mallory}); m.Type != "subscribe_success" {
		t.Fatalf("mallory's own channel: %+v", m)
	}
	if m := intruder.subscribe("m1", "/users/mallory", map[string]string{"Authorization": mallory}); m.Type != "subscribe_error" {
		t.Errorf("a duplicated id: %+v", m)
	}
	intruder.send(map[string]any{"type": "unsubscribe", "id": "v1"})
	if m := intruder.read(); m.Type != "unsubscribe_error" {
		t.Errorf("unsubscribing alice's subscription: %+v", m)
	}
	// Publishing is IAM's, never a token's.
	intruder.send(map[string]any{"type": "publish", "id": "p1", "channel": "/users/alice", "events": []string{`{"cursor":"x"}`}})
	if m := intruder.read(); m.Type != "publish_error" {
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
	if m := victim.read(); m.Type != "data" || m.ID != "v1" || m.Event != `{"cursor":"p0000000000000001"}` {
		t.Errorf("alice got %+v", m)
	}
	if m, ok := intruder.tryRead(100 * time.Millisecond); ok {
		t.Errorf("mallory got %+v", m)
	}

	// Close ends every connection.
	ev.Close()
	began := time.Now()
	if _, ok := victim.tryRead(2 * time.Second); ok || time.Since(began) > time.Second {
		t.Error("a connection outlived Close")
	}
}
