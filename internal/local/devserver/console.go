package devserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// ConsoleHandler is a slog.Handler for a developer's terminal: one short
// line per record. A request's line reads like an access log,
//
//	14:03:01.123 POST /api/v1/sync/events 201 executed 2.1ms key=8e03978e
//
// and any other record is its time, level, message and attributes.
type ConsoleHandler struct {
	mu    *sync.Mutex
	out   io.Writer
	level slog.Leveler
	attrs []slog.Attr
}

// NewConsoleHandler writes to out the records at level or above.
func NewConsoleHandler(out io.Writer, level slog.Leveler) *ConsoleHandler {
	return &ConsoleHandler{mu: &sync.Mutex{}, out: out, level: level}
}

// Enabled reports whether l is logged.
func (h *ConsoleHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// WithAttrs returns a handler that adds attrs to every record.
func (h *ConsoleHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

// WithGroup is not needed by the service: groups are flattened.
func (h *ConsoleHandler) WithGroup(string) slog.Handler { return h }

// requestFields are a request line's attributes, in the order printed and
// with the prefix each gets; the rest is printed as key=value.
var requestFields = []struct{ key, prefix string }{
	{"method", ""}, {"path", ""}, {"status", ""}, {"idempotency_outcome", ""}, {"duration_ms", ""},
	{"key_prefix", "key="}, {"error_code", "code="}, {"from_cache", "from_cache="}, {"error", "error="},
}

// Handle writes r as one line.
func (h *ConsoleHandler) Handle(_ context.Context, r slog.Record) error {
	fields := map[string]string{}
	var order []string
	add := func(a slog.Attr) bool {
		if _, seen := fields[a.Key]; !seen {
			order = append(order, a.Key)
		}
		fields[a.Key] = a.Value.String()
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	var b strings.Builder
	b.WriteString(r.Time.Format("15:04:05.000"))
	if r.Message != "request" {
		fmt.Fprintf(&b, " %s %s", r.Level, r.Message)
		for _, k := range order {
			fmt.Fprintf(&b, " %s=%s", k, fields[k])
		}
	} else {
		for _, f := range requestFields {
			v, ok := fields[f.key]
			if !ok || v == "" {
				continue
			}
			if f.key == "duration_ms" {
				v += "ms"
			}
			b.WriteString(" " + f.prefix + v)
		}
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.out, b.String())
	return err
}
