package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
)

// TestARecordOfTheD1SchemeIsHeldToItsDigest: a record imported with the
// original's digest (HashSchemeD1JS) replays a retry whose body the
// original hashed to it, though RFC 8785's digest differs (integer-like
// keys, "__proto__"), from the store and from the replay cache; another
// body, method or route is a reused key; no business write commits; and the
// records the flow writes keep RFC 8785 (no scheme).
func TestARecordOfTheD1SchemeIsHeldToItsDigest(t *testing.T) {
	// The original's digests of these bodies, as testdata/d1original
	// computes them (TestD1JSDigestIsTheOriginals holds the Go side to
	// node on every class).
	tests := []struct {
		name, body, d1Hash string
	}{
		{"integer-like keys", `{"stepsByHour":{"16":618,"9":744}}`, hashOf(`{"stepsByHour":{"9":744,"16":618}}`)},
		{"__proto__ dropped", `{"__proto__":{"x":1},"a":1}`, hashOf(`{"a":1}`)},
		{"no difference", `{"b":1,"a":[true]}`, hashOf(`{"a":[true],"b":1}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			key := uuid.NewString()
			now := time.Now().UTC().Truncate(time.Millisecond)
			imported := idempotency.Record{
				UserID: "alice", Key: key, PayloadHash: tt.d1Hash, HashScheme: idempotency.HashSchemeD1JS,
				StatusCode: 201, ResponseBody: []byte(`{"event":{"id":"x"},"accepted":true}`),
				Method: "POST", Route: "/r", CreatedAt: now, ExpiresAt: now.Add(time.Hour),
			}
			if written, err := f.store.Insert(ctx, imported); err != nil || !written {
				t.Fatalf("Insert = %v, %v", written, err)
			}
			cached := idempotency.NewFlow(f.store, idempotency.Options{Retention: time.Hour, Cache: idempotency.NewReplayCache(1 << 20)})
			for _, flow := range []*idempotency.Flow[types.TransactWriteItem]{f.ledger, cached, cached} {
				got, err := flow.Do(ctx, request("alice", key, tt.body), f.executor("e1", `{}`))
				if err != nil || got.Outcome != idempotency.Replayed || got.StatusCode != 201 || string(got.Body) != string(imported.ResponseBody) {
					t.Fatalf("retry with the same body = %+v, %v; want the imported answer replayed", got, err)
				}
			}
			for name, req := range map[string]idempotency.Request{
				"other body":   request("alice", key, `{"other":1}`),
				"other method": func() idempotency.Request { r := request("alice", key, tt.body); r.Method = "PUT"; return r }(),
				"other route":  func() idempotency.Request { r := request("alice", key, tt.body); r.Route = "/x"; return r }(),
			} {
				for _, flow := range []*idempotency.Flow[types.TransactWriteItem]{f.ledger, cached} {
					got, err := flow.Do(ctx, req, f.executor("e2", `{}`))
					if err != nil || got.Outcome != idempotency.KeyReused {
						t.Fatalf("%s = %+v, %v; want KeyReused", name, got, err)
					}
				}
			}
			if n := f.markers(t); n != 0 {
				t.Fatalf("%d business writes committed for an imported key, want none", n)
			}
			fresh := uuid.NewString()
			if _, err := f.ledger.Do(ctx, request("alice", fresh, tt.body), f.executor("e3", `{}`)); err != nil {
				t.Fatal(err)
			}
			rec, _, err := f.store.Get(ctx, "alice", fresh)
			if want, _ := idempotency.PayloadHash([]byte(tt.body)); err != nil || rec.HashScheme != "" || rec.PayloadHash != want {
				t.Fatalf("a record the flow writes = %+v, %v; want RFC 8785's digest and no scheme", rec, err)
			}
		})
	}
}

// TestARecordOfAnUnknownSchemeReplaysNothing: a scheme this version does
// not know matches no retry: the key is reused, never run again.
func TestARecordOfAnUnknownSchemeReplaysNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	key := uuid.NewString()
	body := `{"a":1}`
	hash, _ := idempotency.PayloadHash([]byte(body))
	now := time.Now().UTC()
	if _, err := f.store.Insert(ctx, idempotency.Record{
		UserID: "alice", Key: key, PayloadHash: hash, HashScheme: "future", StatusCode: 201, ResponseBody: []byte(`{}`),
		Method: "POST", Route: "/r", CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	got, err := f.ledger.Do(ctx, request("alice", key, body), f.executor("e1", `{}`))
	if err != nil || got.Outcome != idempotency.KeyReused || f.markers(t) != 0 {
		t.Fatalf("got %+v, %v, %d writes; want KeyReused and none", got, err, f.markers(t))
	}
}

func hashOf(form string) string { return idempotency.HashCanonical([]byte(form)) }
