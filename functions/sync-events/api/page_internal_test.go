package api

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// lambdaStringLen is the length of b inside the function's response, as
// aws-lambda-go writes it: encoding/json, HTML escaping off, no quotes.
func lambdaStringLen(b []byte) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(b)); err != nil {
		panic(err)
	}
	return buf.Len() - len(`""`+"\n")
}

// responseSize must never be under what encoding/json really writes, and
// is exact for text the JSON encoder wrote (valid UTF-8, no raw controls).
func TestResponseSizeBoundsTheLambdaEncoding(t *testing.T) {
	exact := []string{"", "plain", `"quoted"`, `back\slash`, "\u2028\u2029", "é\U0010fffd", `{"a":"\"\\\u0001"}`, "</script>&"}
	for _, s := range exact {
		if got, want := responseSize([]byte(s)), lambdaStringLen([]byte(s)); got != want {
			t.Errorf("responseSize(%q) = %d, encoding/json writes %d", s, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		if got, want := responseSize(b), lambdaStringLen(b); got < want {
			t.Fatalf("responseSize(%q) = %d, under the %d encoding/json writes", b, got, want)
		}
	}
}

// The configuration's ceiling for MAX_BODY_BYTES: one such event, every
// byte of it a quote to escape twice on the way out, still fits a page.
func TestLargestConfigurableEventFitsAPage(t *testing.T) {
	ev := syncevent.Event{ID: uuid.NewString(), Type: strings.Repeat("\"", syncevent.MaxTypeLen),
		OccurredAt: strings.Repeat("1", syncevent.MaxOccurredAtLen), Payload: []byte(`{"s":"` + strings.Repeat(`\"`, config.MaxMaxBodyBytes/2) + `"}`),
		Position: syncevent.At(1)}
	p := newPage(1, MaxPageResponseBytes, syncevent.Position{})
	if ok, err := p.add(ev); !ok || err != nil {
		t.Fatalf("an event of %d bytes does not fit a page: %v", config.MaxMaxBodyBytes, err)
	}
	if p.size > MaxPageResponseBytes/7 {
		t.Fatalf("the largest event takes %d bytes of a page; fewer than 7 fit", p.size)
	}
}

// A page holds at most its count, and when it stops there with an event
// waiting, more follow, from its cursor.
func TestPageStopsAtItsCount(t *testing.T) {
	ev := func(seq uint64) syncevent.Event {
		return syncevent.Event{ID: uuid.NewString(), Type: "t", OccurredAt: "2026-12-02T14:03:00Z", Payload: []byte(`{}`), Position: syncevent.At(seq)}
	}
	tests := []struct {
		name     string
		after    uint64
		seqs     []uint64
		added    int
		cursor   uint64
		hasMore  bool
		pageSize int
	}{
		{"no gap", 0, []uint64{1, 2, 3}, 3, 3, false, 10},
		{"none", 4, nil, 0, 4, false, 10},
		{"full", 0, []uint64{1, 2, 3}, 2, 2, true, 2},
		{"full after a cursor", 5, []uint64{6, 7}, 1, 6, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPage(tt.pageSize, MaxPageResponseBytes, syncevent.At(tt.after))
			added := 0
			for _, seq := range tt.seqs {
				ok, err := p.add(ev(seq))
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				added++
			}
			var body struct {
				Cursor  string `json:"cursor"`
				HasMore bool   `json:"hasMore"`
			}
			if err := json.Unmarshal(p.finish(), &body); err != nil {
				t.Fatal(err)
			}
			if added != tt.added || body.Cursor != syncevent.At(tt.cursor).Cursor() || body.HasMore != tt.hasMore {
				t.Fatalf("added %d, cursor %s, hasMore %v; want %d, %s, %v", added, body.Cursor, body.HasMore, tt.added, syncevent.At(tt.cursor).Cursor(), tt.hasMore)
			}
		})
	}
}
