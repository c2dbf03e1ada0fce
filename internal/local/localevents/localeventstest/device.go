// Package localeventstest is a device of the AppSync Events WebSocket
// protocol, for tests of what serves it (package localevents, make run):
// it connects as a browser does, the token in the header subprotocol,
// acknowledges the connection, subscribes and reads what it hears.
//
// It owns no rule of the protocol; it only speaks it, so that each test
// states what it expects.
package localeventstest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sync-events/sync-events/internal/local/localevents"
)

// Message is what a device hears: a reply to one of its messages (by ID),
// a keep-alive, or a subscription's data (Event).
type Message struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Event  string `json:"event"`
	Errors []struct {
		ErrorType string `json:"errorType"`
	} `json:"errors"`
}

// Device is one connection, acknowledged.
type Device struct {
	t    testing.TB
	c    *websocket.Conn
	msgs chan Message
}

// Dial connects to the realtime endpoint of server (an http:// or ws://
// base URL) with token, sends connection_init and waits a second for its
// ack; the connection closes when the test ends.
func Dial(t testing.TB, server, token string) *Device {
	t.Helper()
	base := server
	if len(base) > 4 && base[:4] == "http" {
		base = "ws" + base[4:]
	}
	header, _ := json.Marshal(map[string]string{"host": "local", "Authorization": token})
	c, _, err := websocket.Dial(context.Background(), base+localevents.RealtimePath, &websocket.DialOptions{
		Subprotocols: []string{localevents.Subprotocol, "header-" + base64.RawURLEncoding.EncodeToString(header)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	// One reader for the connection's life: a Read given up by its
	// context would close the connection.
	d := &Device{t: t, c: c, msgs: make(chan Message, 64)}
	go func() {
		defer close(d.msgs)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var m Message
			json.Unmarshal(b, &m) //nolint:errcheck // a malformed message fails the test's expectations
			d.msgs <- m
		}
	}()
	d.Send(map[string]any{"type": "connection_init"})
	if m := d.Read(time.Second); m.Type != "connection_ack" {
		t.Fatalf("after connection_init: %+v", m)
	}
	return d
}

// Send writes m as JSON.
func (d *Device) Send(m any) {
	d.t.Helper()
	b, _ := json.Marshal(m)
	if err := d.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		d.t.Fatal(err)
	}
}

// Next is the next message heard within the wait, and false if none came
// (or the connection closed).
func (d *Device) Next(within time.Duration) (Message, bool) {
	select {
	case m, ok := <-d.msgs:
		return m, ok
	case <-time.After(max(within, 0)):
		return Message{}, false
	}
}

// Read is Next, failing the test if nothing comes.
func (d *Device) Read(within time.Duration) Message {
	d.t.Helper()
	m, ok := d.Next(within)
	if !ok {
		d.t.Fatalf("no message within %v", within)
	}
	return m
}

// Subscribe asks for channel under id, with auth as the subscription's
// authorization (none if nil), and returns the reply to it; what else is
// heard meanwhile (keep-alives) is passed over.
func (d *Device) Subscribe(id, channel string, auth map[string]string) Message {
	d.t.Helper()
	m := map[string]any{"type": "subscribe", "id": id, "channel": channel}
	if auth != nil {
		m["authorization"] = auth
	}
	d.Send(m)
	for {
		if reply := d.Read(time.Second); reply.ID == id {
			return reply
		}
	}
}
