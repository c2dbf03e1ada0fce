package syncevent

import (
	"strings"
	"testing"
	"time"
)

func TestParseDateTimeAcceptsTheRFC3339Grammar(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-12-02T14:03:00Z", time.Date(2026, 12, 2, 14, 3, 0, 0, time.UTC)},
		{"2026-12-02t14:03:00z", time.Date(2026, 12, 2, 14, 3, 0, 0, time.UTC)},
		{"2026-12-02T14:03:00.5+01:00", time.Date(2026, 12, 2, 13, 3, 0, 5e8, time.UTC)},
		{"2026-12-02T14:03:00.123456789123-00:00", time.Date(2026, 12, 2, 14, 3, 0, 123456789, time.UTC)},
		{"2026-12-02T00:00:00+23:59", time.Date(2026, 12, 1, 0, 1, 0, 0, time.UTC)},
		{"2024-02-29T12:00:00Z", time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)},
		{"2000-02-29T12:00:00Z", time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC)},
		{"0000-01-01T00:00:00Z", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		// Leap seconds: at 23:59:60 UTC on a month's last day, however offset.
		{"2016-12-31T23:59:60Z", time.Date(2016, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"1990-12-31T15:59:60-08:00", time.Date(1990, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"2015-07-01T01:59:60.5+02:00", time.Date(2015, 6, 30, 23, 59, 59, 5e8, time.UTC)},
	} {
		got, err := ParseDateTime(tc.in)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseDateTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseDateTimeRefusesWhatTheGrammarDoesNot(t *testing.T) {
	for _, in := range []string{
		"", "2026-12-02", "2026-12-02T14:03:00", "2026-12-02 14:03:00Z", "2026-12-02T14:03Z",
		"2026-12-02T14:03:00,5Z", "2026-12-02T14:03:00.Z", "2026-12-02T14:03:00.5", // comma, empty fraction, no offset
		"2026-12-02T4:03:00Z", "26-12-02T14:03:00Z", "2026-1-02T14:03:00Z", "+2026-12-02T14:03:00Z",
		"2026-13-02T14:03:00Z", "2026-00-02T14:03:00Z", "2026-12-00T14:03:00Z", "2026-12-32T14:03:00Z",
		"2026-02-29T12:00:00Z", "1900-02-29T12:00:00Z", "2026-04-31T12:00:00Z",
		"2026-12-02T24:00:00Z", "2026-12-02T14:60:00Z", "2026-12-02T14:03:61Z",
		"2026-12-02T14:03:00+24:00", "2026-12-02T14:03:00+01:60", "2026-12-02T14:03:00+0100", "2026-12-02T14:03:00+01",
		"2026-12-02T14:03:00UTC", "2026-12-02T14:03:00Z ", " 2026-12-02T14:03:00Z", "2026-12-02T14:03:00ZZ",
		"２026-12-02T14:03:00Z",
		// Second 60 anywhere but 23:59:60 UTC on a month's last day.
		"2016-12-31T23:58:60Z", "2016-12-30T23:59:60Z", "2016-12-31T23:59:60+01:00",
	} {
		if _, err := ParseDateTime(in); err == nil {
			t.Errorf("ParseDateTime(%q) accepted", in)
		}
	}
}

func TestParseKeepsOccurredAtAsSent(t *testing.T) {
	for _, at := range []string{"2026-12-02t14:03:00.50z", "2016-12-31T23:59:60Z", "2026-12-02T14:03:00-00:00"} {
		ev, err := Parse([]byte(`{"id":"6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31","occurredAt":"` + at + `","payload":{},"type":"t"}`))
		if err != nil || ev.OccurredAt != at {
			t.Errorf("occurredAt %q: got %q, %v", at, ev.OccurredAt, err)
		}
	}
	long := "2026-12-02T14:03:00." + strings.Repeat("1", MaxOccurredAtLen-21) + "Z"
	if _, err := Parse([]byte(`{"id":"6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31","occurredAt":"` + long + `","payload":{},"type":"t"}`)); err != nil {
		t.Errorf("occurredAt of %d characters: %v", len(long), err)
	}
	tooLong := "2026-12-02T14:03:00." + strings.Repeat("1", MaxOccurredAtLen-20) + "Z"
	if _, err := Parse([]byte(`{"id":"6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31","occurredAt":"` + tooLong + `","payload":{},"type":"t"}`)); err == nil {
		t.Errorf("occurredAt of %d characters accepted", len(tooLong))
	}
}

func TestParseKeepsThePayloadAsSentAndBoundsItsDepth(t *testing.T) {
	body := func(payload string) []byte {
		return []byte(`{"id":"6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31","occurredAt":"2026-12-02T14:03:00Z","payload":` + payload + `,"type":"t"}`)
	}
	ev, err := Parse(body(`{ "z" : 9007199254740993, "a" : [ -0, 1e-400, 1E+2, 0.10000000000000001 ], "s":"\u00e9\"]" }`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"z":9007199254740993,"a":[-0,1e-400,1E+2,0.10000000000000001],"s":"\u00e9\"]"}`; string(ev.Payload) != want {
		t.Fatalf("payload %s, want %s", ev.Payload, want)
	}
	nest := func(levels int) string { // the payload object is level 1
		return `{"d":` + strings.Repeat("[", levels-1) + `"]}"` + strings.Repeat("]", levels-1) + "}"
	}
	if _, err := Parse(body(nest(MaxPayloadDepth))); err != nil {
		t.Fatalf("payload %d levels deep: %v", MaxPayloadDepth, err)
	}
	if _, err := Parse(body(nest(MaxPayloadDepth + 1))); err == nil {
		t.Fatalf("payload %d levels deep accepted", MaxPayloadDepth+1)
	}
	if d := depth([]byte(nest(7))); d != 7 {
		t.Fatalf("depth %d, want 7", d)
	}
}
