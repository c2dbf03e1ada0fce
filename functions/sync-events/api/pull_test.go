package api_test

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
)

// This file holds the push-then-pull helpers: what a client sends, what
// it reads back, and how big the function's answer is on the wire.

// sentEvent is an event as a client sends it, its members raw JSON.
type sentEvent struct {
	ID, Type, OccurredAt string // decoded values
	Payload              string // raw JSON, as sent
}

func (e sentEvent) body() string {
	return fmt.Sprintf(`{"id":%q,"type":%s,"occurredAt":%s,"payload":%s}`, e.ID, jsonString(e.Type), jsonString(e.OccurredAt), e.Payload)
}

// jsonString is s as a JSON string, written by the standard library, not
// by the encoder under test.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := stdjson.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type pulledPage struct {
	Events     []apitest.ListedEvent `json:"events"`
	NextCursor *string               `json:"nextCursor"`
}

// lambdaResponseSize is the size of resp as the Lambda runtime sends it
// back: aws-lambda-go encodes the handler's answer with encoding/json,
// HTML escaping off. Lambda refuses a synchronous answer over 6 MB.
func lambdaResponseSize(t testing.TB, resp events.APIGatewayV2HTTPResponse) int {
	t.Helper()
	var b bytes.Buffer
	enc := stdjson.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		t.Fatal(err)
	}
	return b.Len()
}

// lambdaResponseLimit is the emulator's limit (6 MiB + 100 bytes), less
// nothing: a page must fit with room to spare, which the walk checks.
const lambdaResponseLimit = 6*1024*1024 + 100

// walk pages through user's events limit at a time and returns them; it
// fails the test on any page that is not a 200, passes the byte budget or
// would not fit a Lambda response.
func walk(hs *apitest.Harness, user string, limit int) []apitest.ListedEvent {
	hs.T.Helper()
	var all []apitest.ListedEvent
	query := map[string]string{"limit": fmt.Sprint(limit)}
	for pages := 0; ; pages++ {
		if pages > 10000 {
			hs.T.Fatal("more than 10 000 pages")
		}
		resp := hs.Get(user, query)
		if resp.StatusCode != 200 {
			hs.T.Fatalf("page %d: %d %.300s", pages, resp.StatusCode, resp.Body)
		}
		if n := lambdaResponseSize(hs.T, resp); n > api.MaxPageResponseBytes+512 || n > lambdaResponseLimit {
			hs.T.Fatalf("page %d: a %d-byte Lambda response; the budget is %d", pages, n, api.MaxPageResponseBytes)
		}
		var p pulledPage
		if err := stdjson.Unmarshal([]byte(resp.Body), &p); err != nil {
			hs.T.Fatalf("page %d does not decode: %v", pages, err)
		}
		if len(p.Events) == 0 && p.NextCursor != nil {
			hs.T.Fatalf("page %d: empty, with a cursor", pages)
		}
		if len(p.Events) > limit {
			hs.T.Fatalf("page %d: %d events, limit %d", pages, len(p.Events), limit)
		}
		all = append(all, p.Events...)
		if p.NextCursor == nil {
			return all
		}
		query["cursor"] = *p.NextCursor
	}
}

// wantSame fails unless got is sent: the same id, type and occurredAt,
// and the payload as sent, by the rule the API keeps (see sameJSON).
func wantSame(t testing.TB, got apitest.ListedEvent, sent sentEvent) {
	t.Helper()
	if got.ID != sent.ID || got.Type != sent.Type || got.OccurredAt != sent.OccurredAt {
		t.Fatalf("listed %q %q %q, sent %q %q %q", got.ID, got.Type, got.OccurredAt, sent.ID, sent.Type, sent.OccurredAt)
	}
	if err := sameJSON([]byte(sent.Payload), got.Payload); err != nil {
		t.Fatalf("event %s: payload changed: %v", sent.ID, err)
	}
}

// sameJSON reports how b differs from a, where "the same" is the API's
// promise: members in the same order, strings of the same value, numbers
// in the same spelling; only white space and string escapes may differ.
func sameJSON(a, b []byte) error {
	da, db := jsontext.NewDecoder(bytes.NewReader(a)), jsontext.NewDecoder(bytes.NewReader(b))
	for i := 0; ; i++ {
		ta, ea := nextAtom(da)
		tb, eb := nextAtom(db)
		if ea != nil || eb != nil {
			if errors.Is(ea, io.EOF) && errors.Is(eb, io.EOF) {
				return nil
			}
			return fmt.Errorf("token %d: %v / %v", i, ea, eb)
		}
		if ta != tb {
			return fmt.Errorf("token %d: sent %.80q, got %.80q", i, ta, tb)
		}
	}
}

// nextAtom is the next token: a string by its value, a number or literal
// by its text, a bracket as itself.
func nextAtom(d *jsontext.Decoder) (string, error) {
	switch d.PeekKind() {
	case '"':
		tok, err := d.ReadToken()
		return `"` + tok.String(), err
	case '0', 't', 'f', 'n':
		v, err := d.ReadValue()
		return string(v), err
	}
	tok, err := d.ReadToken()
	if err != nil {
		return "", err
	}
	return tok.Kind().String(), nil
}

// pushAll posts each event for user under a fresh key and wants a 201.
func pushAll(hs *apitest.Harness, user string, sent []sentEvent) {
	hs.T.Helper()
	for i, e := range sent {
		if resp := hs.Post(user, uuid.NewString(), e.body()); resp.StatusCode != 201 {
			hs.T.Fatalf("event %d (%d bytes): %d %.300s", i, len(e.body()), resp.StatusCode, resp.Body)
		}
	}
}

// wantListed fails unless the walk returned exactly sent, each once, in
// commit order: sent were pushed one after another, so in sent's order.
func wantListed(t testing.TB, got []apitest.ListedEvent, sent []sentEvent) {
	t.Helper()
	if len(got) != len(sent) {
		t.Fatalf("listed %d events, sent %d", len(got), len(sent))
	}
	byID := map[string]sentEvent{}
	for _, e := range sent {
		byID[e.ID] = e
	}
	for i, ev := range got {
		e, ok := byID[ev.ID]
		if !ok {
			t.Fatalf("listed %s twice, or never sent", ev.ID)
		}
		delete(byID, ev.ID)
		wantSame(t, ev, e)
		if ev.ID != sent[i].ID {
			t.Fatalf("event %d out of commit order: %s, sent %s", i, ev.ID, sent[i].ID)
		}
	}
}
