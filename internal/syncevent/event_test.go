package syncevent

import (
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sync-events/sync-events/errcode"
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

// TestParseRefusesAnUnknownFieldWithoutEchoingIt: the member is refused as
// a fault of the body, and neither the message nor the details quote its
// name (an answer never echoes the client's input).
func TestParseRefusesAnUnknownFieldWithoutEchoingIt(t *testing.T) {
	_, err := Parse([]byte(`{"id":"6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31","occurredAt":"2026-12-02T14:03:00Z","payload":{},"type":"t","zqUserIdEcho":"u"}`))
	fields := fieldErrors(t, err)
	if len(fields) != 1 || fields[0].Field != "body" || strings.Contains(err.Error(), "zq") || strings.Contains(fields[0].Message, "zq") {
		t.Fatalf("err = %v, fields %+v", err, fields)
	}
}

// fieldErrors are the fields a VALIDATION_FAILED error names.
func fieldErrors(t *testing.T, err error) errcode.FieldErrors {
	t.Helper()
	e, ok := errcode.Of(err)
	if !ok || e.Code != errcode.ValidationFailed {
		t.Fatalf("err = %v, want VALIDATION_FAILED", err)
	}
	fields, ok := e.Details.(errcode.FieldErrors)
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
	const legacyKey = "2026-12-02T14:03:00.007Z#6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31"
	legacy, err := ParseSortKey(legacyKey)
	if err != nil || !legacy.IsLegacy() || legacy.IsStart() || legacy.SortKey() != legacyKey {
		t.Fatalf("legacy sort key read as %+v, %v", legacy, err)
	}
	for _, pos := range []Position{legacy, At(1), At(255), At(1<<64 - 1)} {
		if got, err := ParseSortKey(pos.SortKey()); err != nil || got != pos {
			t.Fatalf("ParseSortKey(%q) = %v, %v", pos.SortKey(), got, err)
		}
		if got, err := ParseCursor(pos.Cursor()); err != nil || got != pos {
			t.Fatalf("ParseCursor(%q) = %v, %v", pos.Cursor(), got, err)
		}
		// Every legacy position sorts before every sequence number.
		if !pos.IsLegacy() && pos.SortKey() <= legacyKey {
			t.Fatalf("%q sorts before the legacy %q", pos.SortKey(), legacyKey)
		}
	}
	if k := At(255).SortKey(); k != "p00000000000000ff" {
		t.Fatalf("sort key of 255: %q", k)
	}
	if start, err := ParseCursor(Position{}.Cursor()); err != nil || !start.IsStart() {
		t.Fatalf("the start's cursor %q reads as %+v, %v", Position{}.Cursor(), start, err)
	}
	for _, bad := range []string{"", "#", "2026-12-02T14:03:00.007Z", "yesterday#6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31",
		"2026-12-02T14:03:00.007Z#6F1C2A9E-3B7D-4C1E-9A52-0D8E4F7B6A31", "2026-12-02T14:03:00.007Z#x",
		"p", "p00000000000000FF", "p00000000000000f", "p000000000000000ff", "p-000000000000001", "p+000000000000001"} {
		if _, err := ParseSortKey(bad); !errors.Is(err, ErrBadPosition) {
			t.Errorf("ParseSortKey(%q) = %v", bad, err)
		}
		if _, err := ParseCursor(bad); !errors.Is(err, ErrBadPosition) {
			t.Errorf("ParseCursor(%q) = %v", bad, err)
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
	rng := rand.New(rand.NewPCG(1, 2))
	for _, form := range []struct {
		prefix, alphabet string
		n                int
		outside          func(c string) []string
	}{
		{"AAA", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 29, func(c string) []string {
			return []string{c[:31], c + "A", "AAB" + c[3:], "B" + c[1:], c[:31] + "=", c[:31] + "+", c[:31] + "/"}
		}},
		{"p", "0123456789abcdef", 16, func(c string) []string {
			return []string{c[:16], c + "0", "P" + c[1:], c[:16] + "g", c[:16] + "A"}
		}},
	} {
		for range 5000 {
			b := []byte(form.prefix)
			for range form.n {
				b = append(b, form.alphabet[rng.IntN(len(form.alphabet))])
			}
			c := string(b)
			pos, err := ParseCursor(c)
			if err != nil || pos.Cursor() != c || !pattern.MatchString(c) {
				t.Fatalf("ParseCursor(%q) = %v, %v; re-encoded %q", c, pos, err, pos.Cursor())
			}
			for _, bad := range form.outside(c) {
				if _, err := ParseCursor(bad); err == nil || pattern.MatchString(bad) {
					t.Fatalf("%q: ParseCursor err %v, pattern match %v: the two disagree", bad, err, pattern.MatchString(bad))
				}
			}
		}
	}
	today, err := ParseSortKey(time.Now().UTC().Format(TimestampLayout) + "#6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31")
	if err != nil || !pattern.MatchString(today.Cursor()) {
		t.Fatalf("a legacy cursor of today, %q, is outside the pattern (%v)", today.Cursor(), err)
	}
}
