package api_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/sync-events/sync-events/functions/sync-events/api"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/internal/config"
)

type hostileCase struct {
	name   string
	change func(r *events.APIGatewayV2HTTPRequest)
	status int
	code   string
}

// setBody replaces the body; setField replaces one member of the event.
func setBody(b string) func(*events.APIGatewayV2HTTPRequest) {
	return func(r *events.APIGatewayV2HTTPRequest) { r.Body = b }
}

func setField(field, raw string) func(*events.APIGatewayV2HTTPRequest) {
	return func(r *events.APIGatewayV2HTTPRequest) { r.Body = withField(r.Body, field, raw) }
}

// withField rewrites one member of the fixture body (raw JSON, or "" to drop it).
func withField(body, field, raw string) string {
	members := map[string]string{
		"id": fmt.Sprintf("%q", extractID(body)), "type": `"note.created"`,
		"occurredAt": `"2026-12-02T14:03:00Z"`, "payload": `{"title":"Groceries"}`,
	}
	members[field] = raw
	var parts []string
	for _, k := range []string{"id", "type", "occurredAt", "payload", field} {
		if v, ok := members[k]; ok && v != "" {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
			delete(members, k)
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func extractID(body string) string {
	i := strings.Index(body, `"id": "`) + len(`"id": "`)
	return body[i : i+36]
}

func header(name, value string) func(*events.APIGatewayV2HTTPRequest) {
	return func(r *events.APIGatewayV2HTTPRequest) { r.Headers[name] = value }
}

func hostileCases() []hostileCase {
	nested := func(open, close string, depth int) string {
		return `{"id":"` + uuid.NewString() + `","type":"t","occurredAt":"2026-12-02T14:03:00Z","payload":{"deep":` +
			strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth) + "}}"
	}
	big := `{"id":"` + uuid.NewString() + `","type":"t","occurredAt":"2026-12-02T14:03:00Z","payload":{"blob":"` +
		strings.Repeat("x", config.DefaultMaxBodyBytes) + `"}}`
	b64 := func(r *events.APIGatewayV2HTTPRequest) {
		r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(r.Body)), true
	}
	const v, nf, ue = string(errcode.ValidationFailed), string(errcode.NotFound), string(errcode.UnsupportedMediaType)
	return []hostileCase{
		// The Idempotency-Key header.
		{"key missing", func(r *events.APIGatewayV2HTTPRequest) { delete(r.Headers, "idempotency-key") }, 400, v},
		{"key empty", header("idempotency-key", ""), 400, v},
		{"key blank", header("idempotency-key", "   "), 400, v},
		{"key lowercase", func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers["idempotency-key"] = strings.ToLower(uuid.NewString())
		}, 201, ""},
		{"key uppercase", func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers["idempotency-key"] = strings.ToUpper(uuid.NewString())
		}, 201, ""},
		{"key padded with blanks", func(r *events.APIGatewayV2HTTPRequest) { r.Headers["idempotency-key"] = "  " + uuid.NewString() + "\t" }, 201, ""},
		{"key not a UUID", header("idempotency-key", "order-42"), 400, v},
		{"key in braces", func(r *events.APIGatewayV2HTTPRequest) { r.Headers["idempotency-key"] = "{" + uuid.NewString() + "}" }, 400, v},
		{"key as urn", func(r *events.APIGatewayV2HTTPRequest) { r.Headers["idempotency-key"] = "urn:uuid:" + uuid.NewString() }, 400, v},
		{"key without hyphens", func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers["idempotency-key"] = strings.ReplaceAll(uuid.NewString(), "-", "")
		}, 400, v},
		{"key over-long", func(r *events.APIGatewayV2HTTPRequest) { r.Headers["idempotency-key"] = uuid.NewString() + "0" }, 400, v},
		{"key of 64 KiB", header("idempotency-key", strings.Repeat("a", 64<<10)), 400, v},
		{"key repeated (two headers)", func(r *events.APIGatewayV2HTTPRequest) { r.Headers["Idempotency-Key"] = uuid.NewString() }, 400, v},
		{"key repeated (comma-joined)", func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers["idempotency-key"] = uuid.NewString() + "," + uuid.NewString()
		}, 400, v},
		// The body as bytes and as JSON.
		{"no body", setBody(""), 400, v},
		{"blank body", setBody(" \n\t "), 400, v},
		{"not JSON", setBody("id=1&type=x"), 400, v},
		{"JSON array", setBody(`[1,2,3]`), 400, v},
		{"JSON string", setBody(`"event"`), 400, v},
		{"JSON null", setBody(`null`), 400, v},
		{"trailing garbage", func(r *events.APIGatewayV2HTTPRequest) { r.Body += "}" }, 400, v},
		{"two JSON values", func(r *events.APIGatewayV2HTTPRequest) { r.Body += " {}" }, 400, v},
		{"duplicate member names", func(r *events.APIGatewayV2HTTPRequest) { r.Body = `{"type":"x",` + r.Body[1:] }, 400, v},
		{"invalid UTF-8", setField("type", "\"bad \xff\xfe\""), 400, v},
		{"invalid UTF-8, base64-encoded", func(r *events.APIGatewayV2HTTPRequest) {
			r.Body = withField(r.Body, "type", "\"bad \xc3\x28\"")
			b64(r)
		}, 400, v},
		{"lone high surrogate", setField("type", `"\ud83d"`), 400, v},
		{"lone low surrogate", setField("payload", `{"s":"\ude00"}`), 400, v},
		{"number 1e400", setField("payload", `{"n":1e400}`), 400, v},
		{"number -1e400", setField("payload", `{"n":-1e400}`), 400, v},
		{"NaN", setField("payload", `{"n":NaN}`), 400, v},
		{"100 000 nested arrays", setBody(nested("[", "]", 100000)), 400, v},
		{"40 000 nested objects (as deep as fits the size limit)", setBody(nested(`{"":`, "}", 40000)), 400, v},
		{"body over the size limit", setBody(big), 413, string(errcode.PayloadTooLarge)},
		{"base64 body over the size limit", func(r *events.APIGatewayV2HTTPRequest) { r.Body = big; b64(r) }, 413, string(errcode.PayloadTooLarge)},
		{"base64 body", b64, 201, ""},
		{"base64 flag on a body that is not base64", func(r *events.APIGatewayV2HTTPRequest) { r.IsBase64Encoded = true }, 400, v},
		{"base64 with bad padding", func(r *events.APIGatewayV2HTTPRequest) { b64(r); r.Body = strings.TrimRight(r.Body, "=") + "=" }, 400, v},
		// Content-Type.
		{"no content type", func(r *events.APIGatewayV2HTTPRequest) { delete(r.Headers, "content-type") }, 415, ue},
		{"text/plain", header("content-type", "text/plain"), 415, ue},
		{"form content type", header("content-type", "application/x-www-form-urlencoded"), 415, ue},
		{"JSON in Latin-1", header("content-type", "application/json; charset=iso-8859-1"), 415, ue},
		{"malformed content type", header("content-type", "application/json; ;;="), 415, ue},
		{"JSON with charset=utf-8", header("content-type", "application/json; charset=utf-8"), 201, ""},
		// Fields.
		{"id missing", setField("id", ""), 400, v},
		{"type missing", setField("type", ""), 400, v},
		{"occurredAt missing", setField("occurredAt", ""), 400, v},
		{"payload missing", setField("payload", ""), 400, v},
		{"unknown field", setField("priority", `1`), 400, v},
		{"id a number", setField("id", `42`), 400, v},
		{"id not a UUID", setField("id", `"note-42"`), 400, v},
		{"id null", setField("id", `null`), 400, v},
		{"type a number", setField("type", `7`), 400, v},
		{"type empty", setField("type", `""`), 400, v},
		{"type of 65 characters", setField("type", `"`+strings.Repeat("t", 65)+`"`), 400, v},
		{"type of 64 characters", setField("type", `"`+strings.Repeat("t", 64)+`"`), 201, ""},
		{"type of 64 non-ASCII characters", setField("type", `"`+strings.Repeat("é", 64)+`"`), 201, ""},
		{"occurredAt not RFC 3339", setField("occurredAt", `"2026-12-02 14:03:00"`), 400, v},
		{"occurredAt a date only", setField("occurredAt", `"2026-12-02"`), 400, v},
		{"occurredAt epoch number", setField("occurredAt", `1796220181`), 400, v},
		{"payload an array", setField("payload", `[1]`), 400, v},
		{"payload null", setField("payload", `null`), 400, v},
		{"payload a string", setField("payload", `"{}"`), 400, v},
		// Identity.
		{"user id smuggled in the body", setField("userId", `"mallory"`), 400, v},
		{"user id smuggled in the body as sub", setField("sub", `"mallory"`), 400, v},
		{"user id smuggled in a header", header("x-user-id", "mallory"), 201, ""},
		{"no authorizer", func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.Authorizer = nil }, 401, string(errcode.Unauthorized)},
		{"claims without sub", func(r *events.APIGatewayV2HTTPRequest) { delete(r.RequestContext.Authorizer.JWT.Claims, "sub") }, 401, string(errcode.Unauthorized)},
		{"blank sub", func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.Authorizer.JWT.Claims["sub"] = " " }, 401, string(errcode.Unauthorized)},
		// Routes and methods.
		{"unknown route", func(r *events.APIGatewayV2HTTPRequest) { r.RawPath = "/api/v1/sync/event" }, 404, nf},
		{"trailing slash", func(r *events.APIGatewayV2HTTPRequest) { r.RawPath += "/" }, 404, nf},
		{"root", func(r *events.APIGatewayV2HTTPRequest) { r.RawPath = "/" }, 404, nf},
		{"path traversal", func(r *events.APIGatewayV2HTTPRequest) { r.RawPath = "/api/v1/sync/events/../events" }, 404, nf},
		{"PUT", func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.HTTP.Method = "PUT" }, 405, string(errcode.MethodNotAllowed)},
		{"PATCH", func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.HTTP.Method = "PATCH" }, 405, string(errcode.MethodNotAllowed)},
		{"DELETE", func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.HTTP.Method = "DELETE" }, 405, string(errcode.MethodNotAllowed)},
		{"OPTIONS", func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.HTTP.Method = "OPTIONS" }, 405, string(errcode.MethodNotAllowed)},
		{"lowercase method", func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.HTTP.Method = "post" }, 405, string(errcode.MethodNotAllowed)},
		// Noncharacters (RFC 7493 section 2.1): escaped, raw, in a member name.
		{"noncharacter U+FFFF escaped", setField("payload", `{"a":"\uffff"}`), 400, v},
		{"noncharacter U+FDD0 raw", setField("payload", "{\"a\":\"\uFDD0\"}"), 400, v},
		{"noncharacter U+1FFFE in a name", setField("payload", `{"\ud83f\udffe":1}`), 400, v},
		{"noncharacter in the type", setField("type", `"t\ufffe"`), 400, v},
		{"named stage prefix", func(r *events.APIGatewayV2HTTPRequest) {
			r.RequestContext.Stage = "prod"
			r.RawPath = "/prod" + api.EventsPath
		}, 201, ""},
	}
}

// TestHostileInput runs each case through the real handler on a real
// backend: the expected status and code, never a 5xx, and no write for
// anything refused.
func TestHostileInput(t *testing.T) {
	hs := apitest.New(t)
	cases := hostileCases()
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	var keys []string
	writes := func() int { return hs.LedgerCount() + len(hs.B.StoredEvents(t)) }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := apitest.Request("POST", "alice", uuid.NewString(), apitest.EventBody(t, uuid.NewString()))
			tc.change(&req)
			keys = append(keys, sentKeys(req)...)
			before := writes()
			resp := hs.Do(req)
			if resp.StatusCode >= 500 {
				t.Fatalf("a 5xx: %d %s", resp.StatusCode, resp.Body)
			}
			apitest.WantResponse(t, resp, tc.status, tc.code)
			if !strings.HasPrefix(resp.Body, `{"`) || resp.Headers["Content-Type"] != "application/json" {
				t.Fatalf("not a JSON answer: %v %s", resp.Headers, resp.Body)
			}
			switch after := writes(); {
			case tc.status != 201 && after != before:
				t.Fatalf("a refused request wrote %d items", after-before)
			case tc.status == 201 && after != before+2:
				t.Fatalf("a stored event wrote %d items, want 2", after-before)
			}
		})
	}
	if got := hs.Stored(); len(got) != 1 || len(got["alice"]) == 0 {
		t.Fatalf("events stored for %v; only alice's identity may be used", got)
	}
	wantCleanLogs(hs, keys, "Groceries", "alice", "mallory", "Bearer")
}

// sentKeys are the idempotency keys req carries after a case changed it:
// every Idempotency-Key header, whatever its case, whole and each of its
// comma-separated parts, trimmed. Blank values and values of 8 characters
// or fewer (a logged key prefix may equal them) are left out.
func sentKeys(req events.APIGatewayV2HTTPRequest) []string {
	var out []string
	for name, v := range req.Headers {
		if !strings.EqualFold(name, idempotency.HeaderName) {
			continue
		}
		for _, k := range append([]string{v}, strings.Split(v, ",")...) {
			if k = strings.TrimSpace(k); len(k) > 8 {
				out = append(out, k)
			}
		}
	}
	return out
}

// wantCleanLogs checks the logs hold no full key and none of the given
// strings (bodies, user ids, tokens).
func wantCleanLogs(hs *apitest.Harness, keys []string, forbidden ...string) {
	hs.T.Helper()
	logs, metricLines := hs.Logs(), hs.Metrics()
	if !strings.Contains(logs, `"idempotency_outcome"`) || !strings.Contains(logs, `"request_id"`) {
		hs.T.Fatalf("the logs lack the outcome or the request id:\n%.500s", logs)
	}
	if !strings.Contains(metricLines, `"_aws"`) {
		hs.T.Fatalf("no metrics lines:\n%.500s", metricLines)
	}
	// The metrics lines go to the same log: they are held to the same rule.
	logs += metricLines
	for _, k := range keys {
		if strings.Contains(strings.ToLower(logs), strings.ToLower(k)) {
			hs.T.Errorf("a full idempotency key is in the logs: %s", k)
		}
	}
	for _, f := range forbidden {
		if strings.Contains(logs, f) {
			hs.T.Errorf("the logs contain %q", f)
		}
	}
}
