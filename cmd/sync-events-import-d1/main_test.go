package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/errcode"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/d1import/d1importtest"
)

// payloads are event payloads of each class the original and RFC 8785
// may hash apart, and some they hash alike.
var payloads = []string{
	`{"title":"Groceries","items":["milk","eggs"],"done":false,"priority":2}`,
	`{"stepsByHour":{"9":744,"16":618}}`,
	`{"counts":{"0":6,"1":3,"-1":8}}`,
	`{"byMonth":{"01":1,"09":2,"10":3,"12":4}}`,
	`{"__proto__":{"x":1},"title":"proto"}`,
	`{"text":"é 😀 \u2028","n":[1.5,1e21,-0,0.1,5e-324],"😀":{"é":{}},"e":[]}`,
	`{"ids":{"4294967294":"last index","4294967295":"not one","7":"seven"}}`,
}

// preCutOver is what devices sent the original before the cut-over: one
// request per payload, per user, some keys in uppercase (as iOS's
// UUID().uuidString writes them), and one row older than the retention.
func preCutOver() []d1importtest.Request {
	var reqs []d1importtest.Request
	for i, p := range payloads {
		for _, user := range []string{"user-a", "user-b"} {
			key := uuid.NewString()
			if i%2 == 1 {
				key = strings.ToUpper(key)
			}
			body := fmt.Sprintf(`{"id":%q,"type":"note.created","occurredAt":"2026-12-02T14:03:00.250+01:00","payload":%s}`, uuid.NewString(), p)
			reqs = append(reqs, d1importtest.Request{Key: key, User: user, Body: body})
		}
	}
	expired := d1importtest.Request{Key: uuid.NewString(), User: "user-a", Body: reqs[0].Body,
		CreatedAt: time.Now().Add(-10 * 24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")}
	return append(reqs, expired)
}

// TestARetryOfAKeyTheOriginalAnsweredIsReplayedAfterTheCutOver: the
// original's JavaScript serves the requests and stores its ledger; the
// export, in each of its forms, is imported with the command into the
// ledger of the real sync API on a real backend; then every pre-cut-over
// key sent again with its body is replayed byte for byte with
// Idempotent-Replayed: true, with another body is a 409, and no event is
// stored: nothing ran twice. A second run of the command changes nothing.
func TestARetryOfAKeyTheOriginalAnsweredIsReplayedAfterTheCutOver(t *testing.T) {
	reqs := preCutOver()
	served := d1importtest.Serve(t, reqs)
	if len(served.Rows) != len(reqs) {
		t.Fatalf("the original stored %d rows for %d requests", len(served.Rows), len(reqs))
	}
	// The original's own retry of each: its replay, as it answered it.
	for i, a := range served.Answers {
		if a.Status != 201 {
			t.Fatalf("the original answered request %d with %d", i, a.Status)
		}
	}
	for _, form := range d1importtest.Forms {
		t.Run(string(form), func(t *testing.T) {
			hs := apitest.New(t)
			path := d1importtest.Write(t, t.TempDir(), form, served.Rows)
			env := map[string]string{config.EnvEndpoint: hs.B.Endpoint}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"-table", hs.B.Tables.Ledger, path}, func(k string) string { return env[k] }, &stdout, &stderr)
			want := fmt.Sprintf("rows %d\nimported %d\nalready present 0\nexpired 1\nrefused 0\n", len(reqs), len(reqs)-1)
			if code != exitOK || !strings.HasPrefix(stdout.String(), want) || !strings.Contains(stderr.String(), "rows/s written") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant stdout to begin\n%s", code, &stdout, &stderr, want)
			}
			for i, r := range reqs[:len(reqs)-1] {
				row := served.Rows[i]
				again := hs.Post(r.User, r.Key, r.Body)
				if again.StatusCode != 201 || again.Body != row.Body || again.Headers["Idempotent-Replayed"] != "true" {
					t.Fatalf("retry %d (payload %s): %d %s replayed=%q; want 201 %s replayed", i, payloads[i/2], again.StatusCode, again.Body, again.Headers["Idempotent-Replayed"], row.Body)
				}
				// The same body with its members in another order and
				// other spacing is the same payload to the original.
				var v any
				if err := json.Unmarshal([]byte(r.Body), &v); err == nil && !strings.Contains(r.Body, "__proto__") {
					reordered, _ := json.MarshalIndent(v, "", " ")
					if again := hs.Post(r.User, strings.ToLower(r.Key), string(reordered)); again.StatusCode != 201 || again.Body != row.Body {
						t.Fatalf("retry %d reordered, key lowercase: %d %s", i, again.StatusCode, again.Body)
					}
				}
				other := strings.Replace(r.Body, `"type":"note.created"`, `"type":"note.updated"`, 1)
				apitest.WantResponse(t, hs.Post(r.User, r.Key, other), 409, string(errcode.KeyReused))
			}
			if stored := hs.Stored(); len(stored) != 0 {
				t.Fatalf("events stored after the retries: %v; want none, each was answered before the cut-over", stored)
			}
			recs := hs.B.LedgerRecords(t)
			if len(recs) != len(reqs)-1 {
				t.Fatalf("%d ledger records, want %d", len(recs), len(reqs)-1)
			}
			for _, rec := range recs {
				if rec.HashScheme != idempotency.HashSchemeD1JS || rec.Key != strings.ToLower(rec.Key) {
					t.Fatalf("record %+v", rec)
				}
			}
			stdout.Reset()
			code = run(context.Background(), []string{"-table", hs.B.Tables.Ledger, path}, func(k string) string { return env[k] }, &stdout, &stderr)
			want = fmt.Sprintf("rows %d\nimported 0\nalready present %d\nexpired 1\nrefused 0\n", len(reqs), len(reqs)-1)
			if code != exitOK || !strings.HasPrefix(stdout.String(), want) {
				t.Fatalf("second run: exit %d\n%s", code, &stdout)
			}
		})
	}
}

// TestRefusedRowsAreListedByPrefixAndExitThree: refused rows are listed by
// their key's first 8 characters and their reason, never a user id or a
// whole key, and the command exits 3; a dry run writes nothing.
func TestRefusedRowsAreListedByPrefixAndExitThree(t *testing.T) {
	key := uuid.NewString()
	rows := []d1importtest.Row{
		{Key: key, UserID: "user-secret", PayloadHash: strings.Repeat("ab", 32), StatusCode: 201, Body: `{}`, CreatedAt: time.Now().UTC().Format(time.RFC3339)},
		{Key: "not-a-uuid-at-all", UserID: "user-secret", PayloadHash: strings.Repeat("ab", 32), StatusCode: 201, Body: `{}`, CreatedAt: time.Now().UTC().Format(time.RFC3339)},
	}
	path := d1importtest.Write(t, t.TempDir(), d1importtest.SQLValues, rows)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-dry-run", path}, func(string) string { return "" }, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if code != exitRefused || !strings.Contains(stdout.String(), "refused \"not-a-uu\"…: key is not a UUID") ||
		!strings.Contains(stdout.String(), "would import") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if strings.Contains(out, "user-secret") || strings.Contains(out, key[:9]) || strings.Contains(out, "not-a-uuid-at-all") {
		t.Fatalf("the output names a user or a whole key:\n%s", out)
	}
	for _, args := range [][]string{{}, {path, path}, {"-method", "GET", "-dry-run", path}, {"-route", "api", "-dry-run", path}, {path}} {
		if code := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
