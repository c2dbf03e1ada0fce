package syncevent

import (
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/sync-events/sync-events/internal/errcode"
)

func TestParseReportsEveryBadField(t *testing.T) {
	_, err := Parse([]byte(`{"id":"x","occurredAt":5,"payload":[],"type":""}`))
	fields := fieldErrors(t, err)
	got := map[string]string{}
	for _, f := range fields {
		got[f.Field] = f.Message
	}
	for _, field := range []string{"id", "type", "occurredAt", "payload"} {
		if got[field] == "" {
			t.Errorf("no error for %s (got %v)", field, got)
		}
	}
}

func TestParseNamesAnUnknownField(t *testing.T) {
	_, err := Parse([]byte(`{"id":"6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31","occurredAt":"2026-12-02T14:03:00Z","payload":{},"type":"t","userId":"u"}`))
	if fields := fieldErrors(t, err); len(fields) != 1 || fields[0].Field != "userId" {
		t.Fatalf("err = %v", err)
	}
}

// fieldErrors are the fields a VALIDATION_FAILED error names.
func fieldErrors(t *testing.T, err error) []FieldError {
	t.Helper()
	e, ok := errcode.Of(err)
	if !ok || e.Code != errcode.ValidationFailed {
		t.Fatalf("err = %v, want VALIDATION_FAILED", err)
	}
	fields, ok := e.Details.([]FieldError)
	if !ok || len(fields) == 0 {
		t.Fatalf("err = %v names no fields", err)
	}
	return fields
}

func TestParseKeepsTheEvent(t *testing.T) {
	ev, err := Parse([]byte(`{"id":"6F1C2A9E-3B7D-4C1E-9A52-0D8E4F7B6A31","occurredAt":"2026-12-02T14:03:00.5+01:00","payload":{"a":[1]},"type":"note.created"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31" || ev.Type != "note.created" || ev.OccurredAt != "2026-12-02T14:03:00.5+01:00" || string(ev.Payload) != `{"a":[1]}` {
		t.Fatalf("got %+v", ev)
	}
}

func TestPositionRoundTrips(t *testing.T) {
	ev := Event{ID: "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31", ReceivedAt: time.Date(2026, 12, 2, 14, 3, 0, 7e6, time.UTC)}
	pos := ev.Position()
	if k := pos.SortKey(); k != "2026-12-02T14:03:00.007Z#6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31" {
		t.Fatalf("sort key %s", k)
	}
	if got, err := ParseSortKey(pos.SortKey()); err != nil || got != pos {
		t.Fatalf("ParseSortKey = %v, %v", got, err)
	}
	if got, err := ParseCursor(pos.Cursor()); err != nil || got != pos {
		t.Fatalf("ParseCursor = %v, %v", got, err)
	}
	for _, bad := range []string{"", "#", "2026-12-02T14:03:00.007Z", "yesterday#6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31",
		"2026-12-02T14:03:00.007Z#6F1C2A9E-3B7D-4C1E-9A52-0D8E4F7B6A31", "2026-12-02T14:03:00.007Z#x"} {
		if _, err := ParseSortKey(bad); !errors.Is(err, ErrBadPosition) {
			t.Errorf("ParseSortKey(%q) = %v", bad, err)
		}
		if _, err := ParseCursor(base64.RawURLEncoding.EncodeToString([]byte(bad))); !errors.Is(err, ErrBadPosition) {
			t.Errorf("ParseCursor(%q) = %v", bad, err)
		}
	}
}

// TestCursorPatternIsExactlyTheCursors: every string the documented
// pattern admits is a position that encodes back to itself, and strings
// one step outside it are refused, so that a client holding to the OpenAPI
// document cannot send a cursor the API refuses.
func TestCursorPatternIsExactlyTheCursors(t *testing.T) {
	pattern := regexp.MustCompile(CursorPattern)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		b := []byte("AAA")
		for range 29 {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		c := string(b)
		pos, err := ParseCursor(c)
		if err != nil || pos.Cursor() != c || !pattern.MatchString(c) {
			t.Fatalf("ParseCursor(%q) = %v, %v; re-encoded %q", c, pos, err, pos.Cursor())
		}
		outside := []string{c[:31], c + "A", "AAB" + c[3:], "B" + c[1:], c[:31] + "=", c[:31] + "+", c[:31] + "/"}
		for _, bad := range outside {
			if _, err := ParseCursor(bad); err == nil || pattern.MatchString(bad) {
				t.Fatalf("%q: ParseCursor err %v, pattern match %v: the two disagree", bad, err, pattern.MatchString(bad))
			}
		}
	}
	now := Position{ReceivedAt: time.Now().UTC().Truncate(time.Millisecond), ID: "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31"}
	if !pattern.MatchString(now.Cursor()) {
		t.Fatalf("a cursor of today, %q, is outside the pattern", now.Cursor())
	}
}
