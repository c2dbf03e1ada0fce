package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sync-events/sync-events/internal/local/devserver"
	"github.com/sync-events/sync-events/internal/local/localevents"
	"github.com/sync-events/sync-events/internal/local/localevents/localeventstest"
	"github.com/sync-events/sync-events/internal/local/rie"
	"github.com/sync-events/sync-events/internal/poke"
)

// TestStreamEventUnderTheRuntimeEmulator runs the real bootstrap under
// aws-lambda-rie, as sam local invoke does, with events/poke's stream
// event (two head records of one user, as Lambda delivers them), publishing
// to make run's Event API stand-in: a device subscribed to that user's
// channel hears one poke, at the higher head. With the Event API failing,
// the invocation fails, which is what makes Lambda retry the batch.
func TestStreamEventUnderTheRuntimeEmulator(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("aws-lambda-rie runs on Linux only")
	}
	bootstrap, emulator, err := rie.Build(t.TempDir(), ".")
	if err != nil {
		t.Fatal(err)
	}
	event, err := os.ReadFile("../../events/poke/stream-heads.json")
	if err != nil {
		t.Fatal(err)
	}
	const user = "0b6e1f7a-5c2d-4a9e-8f3b-6d1c0a2e4b57"

	ev := localevents.New(localevents.Options{Subject: devserver.BearerSubject, Allowed: poke.MaySubscribe})
	channel := httptest.NewServer(ev)
	defer func() { ev.Close(); channel.Close() }()
	device := subscribe(t, channel.URL, user)

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer failing.Close()

	for _, tc := range []struct {
		name, url string
		fails     bool
	}{{"the Event API up", channel.URL + localevents.PublishPath, false}, {"the Event API down", failing.URL + "/event", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer // the emulator's output, written by exec's goroutine
			fn, err := rie.Start(rie.Options{RIE: emulator, Bootstrap: bootstrap, Stdout: &logs, Env: []string{"LIVE_PUBLISH_URL=" + tc.url}})
			if err != nil {
				t.Fatal(err)
			}
			defer fn.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, err := fn.Invoke(ctx, event)
			if err != nil {
				t.Fatal(err)
			}
			failed := strings.Contains(string(out), "errorMessage")
			if failed != tc.fails {
				t.Fatalf("answer %s, want a failure: %v\n%s", out, tc.fails, logs.String())
			}
			if strings.Contains(logs.String(), user) {
				t.Errorf("the log names the user:\n%s", logs.String())
			}
			if tc.fails {
				return
			}
			msg, ok := device.Next(2 * time.Second)
			if !ok || msg.Type != "data" || msg.Event != `{"cursor":"p000000000000002a"}` {
				t.Fatalf("the device heard %+v %v", msg, ok)
			}
			if extra, ok := device.Next(200 * time.Millisecond); ok {
				t.Errorf("a second poke for one batch: %+v", extra)
			}
		})
	}
}

// lockedBuffer is a strings.Builder safe to write from one goroutine and
// read from another.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// subscribe connects to the stand-in as a device of user and subscribes
// to their channel.
func subscribe(t *testing.T, base, user string) *localeventstest.Device {
	t.Helper()
	tok := devserver.UnsignedToken(map[string]any{"sub": user})
	d := localeventstest.Dial(t, base, tok)
	if got := d.Subscribe("s", "/users/"+user, map[string]string{"Authorization": tok}); got.Type != "subscribe_success" {
		t.Fatalf("subscribe: %+v", got)
	}
	return d
}

func TestLocalPublishURLMustBeLocal(t *testing.T) {
	for raw, ok := range map[string]bool{
		"http://127.0.0.1:3000/event": true, "http://localhost:3000/event": true, "http://host.docker.internal:3000/event": true,
		"http://sync-events-local:3000/event": true, "http://[::1]:3000/event": true,
		"https://xyz.appsync-api.us-east-1.amazonaws.com/event": false, "http://example.com/event": false, "ftp://127.0.0.1/event": false, "": false,
	} {
		if err := checkLocal(raw); (err == nil) != ok {
			t.Errorf("checkLocal(%q) = %v, want ok %v", raw, err, ok)
		}
	}
}
