// Command loadgen drives the sync-events API on this machine with N
// concurrent clients and a mix of fresh, replayed and conflicting requests,
// then checks that no event was lost or stored twice. It is bounded in
// requests and time and talks to loopback addresses only.
//
//	loadgen -url http://127.0.0.1:3000 -clients 16 -requests 5000 -users 20 -mix fresh=70,replay=20,conflict=10
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sync-events/sync-events/internal/local/devserver"
)

type options struct {
	url                string
	clients, requests  int
	users              int
	duration           time.Duration
	window             int // requests per row of the throughput table; 0: none
	fresh, replay, bad int // the mix, in parts
}

func main() {
	var o options
	var mix string
	flag.StringVar(&o.url, "url", "http://127.0.0.1:3000", "the API (make run)")
	flag.IntVar(&o.clients, "clients", 16, "concurrent clients")
	flag.IntVar(&o.requests, "requests", 5000, "requests in all (at most 1 000 000)")
	flag.IntVar(&o.users, "users", 20, "distinct users")
	flag.DurationVar(&o.duration, "duration", time.Minute, "stop after this long, whatever is left (at most 10m)")
	flag.IntVar(&o.window, "window", 0, "print throughput for each window of this many requests, with the events stored at its start (0: off)")
	flag.StringVar(&mix, "mix", "fresh=70,replay=20,conflict=10", "parts of fresh, replayed and conflicting requests")
	flag.Parse()
	if err := o.parseMix(mix); err != nil {
		fail(err)
	}
	if err := o.check(); err != nil {
		fail(err)
	}
	r, err := run(o)
	if err != nil {
		fail(err)
	}
	fmt.Print(r.report(o))
	if r.problems > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}

func (o *options) parseMix(mix string) error {
	for _, part := range strings.Split(mix, ",") {
		name, n, ok := strings.Cut(part, "=")
		v, err := strconv.Atoi(n)
		if !ok || err != nil || v < 0 {
			return fmt.Errorf("-mix: %q is not name=parts", part)
		}
		switch name {
		case "fresh":
			o.fresh = v
		case "replay":
			o.replay = v
		case "conflict":
			o.bad = v
		default:
			return fmt.Errorf("-mix: unknown %q (fresh, replay, conflict)", name)
		}
	}
	if o.fresh == 0 {
		return errors.New("-mix: fresh must be above 0: replays and conflicts need something to repeat")
	}
	return nil
}

// check bounds the run and refuses any target that is not this machine.
func (o *options) check() error {
	switch {
	case o.clients < 1 || o.clients > 1024:
		return errors.New("-clients must be 1 to 1024")
	case o.requests < 1 || o.requests > 1_000_000:
		return errors.New("-requests must be 1 to 1 000 000")
	case o.users < 1 || o.duration <= 0 || o.duration > 10*time.Minute:
		return errors.New("-users must be at least 1 and -duration from 1ns to 10m")
	case o.window < 0:
		return errors.New("-window must be 0 (off) or more")
	}
	u, err := url.Parse(o.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("-url %q is not an http URL", o.url)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-url %q: only loopback addresses (127.0.0.0/8, ::1, localhost) are allowed", o.url)
	}
	return nil
}

// answer is what one request got.
type answer struct {
	status   int
	code     string
	replayed bool
	body     string
}

// client sends API requests over HTTP.
type client struct {
	o    options
	http *http.Client
}

func (c *client) do(ctx context.Context, method, user, key, query, body string) (answer, error) {
	target := strings.TrimRight(c.o.url, "/") + "/api/v1/sync/events"
	if query != "" {
		target += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+devserver.UnsignedToken(map[string]any{"sub": user}))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return parse(resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", string(b)), err
}

func parse(status int, replayed bool, body string) answer {
	var e struct{ Error string }
	json.Unmarshal([]byte(body), &e) //nolint:errcheck // success bodies have no error
	return answer{status: status, code: e.Error, replayed: replayed, body: body}
}
