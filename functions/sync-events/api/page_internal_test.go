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
		OccurredAt: strings.Repeat("1", syncevent.MaxOccurredAtLen), Payload: []byte(`{"s":"` + strings.Repeat(`\"`, config.MaxMaxBodyBytes/2) + `"}`)}
	p := newPage(1, MaxPageResponseBytes)
	if ok, err := p.add(ev); !ok || err != nil {
		t.Fatalf("an event of %d bytes does not fit a page: %v", config.MaxMaxBodyBytes, err)
	}
	if p.size > MaxPageResponseBytes/7 {
		t.Fatalf("the largest event takes %d bytes of a page; fewer than 7 fit", p.size)
	}
}
