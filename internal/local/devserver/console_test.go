package devserver_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/sync-events/sync-events/internal/local/devserver"
)

func TestConsoleLines(t *testing.T) {
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want string
	}{
		{"request", func(l *slog.Logger) {
			l.Info("request", "request_id", "r-1", "trace_id", "", "method", "POST", "path", "/api/v1/sync/events",
				"status", 201, "idempotency_outcome", "executed", "duration_ms", 2.5, "key_prefix", "8e03978e")
		}, " POST /api/v1/sync/events 201 executed 2.5ms key=8e03978e\n"},
		{"refused request", func(l *slog.Logger) {
			l.Info("request", "method", "POST", "path", "/x", "status", 404, "idempotency_outcome", "refused", "duration_ms", 0.1, "error_code", "NOT_FOUND")
		}, " POST /x 404 refused 0.1ms code=NOT_FOUND\n"},
		{"other", func(l *slog.Logger) { l.Info("listening", "addr", "http://127.0.0.1:3000") }, " INFO listening addr=http://127.0.0.1:3000\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.log(slog.New(devserver.NewConsoleHandler(&out, slog.LevelInfo)))
			line := out.String()
			// The line starts with the time, HH:MM:SS.mmm.
			if len(line) < 12 || !strings.HasSuffix(line, tt.want) || strings.Count(line, "\n") != 1 {
				t.Fatalf("line %q, want a time then %q", line, tt.want)
			}
		})
	}
}

func TestConsoleDropsBelowItsLevel(t *testing.T) {
	var out bytes.Buffer
	slog.New(devserver.NewConsoleHandler(&out, slog.LevelWarn)).Info("request", "status", 200)
	if out.Len() != 0 {
		t.Fatalf("wrote %q below its level", out.String())
	}
}
