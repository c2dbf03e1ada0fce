package d1import_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/internal/d1import"
	"github.com/sync-events/sync-events/internal/d1import/d1importtest"
)

var now = time.Now().UTC().Truncate(time.Millisecond)

// iso is a created_at as the original writes it (Date.toISOString).
func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func goodRow(user string) d1importtest.Row {
	return d1importtest.Row{
		Key: uuid.NewString(), UserID: user, PayloadHash: strings.Repeat("0a", 32), StatusCode: 201,
		Body: `{"event":{"id":"e1"},"accepted":true}`, CreatedAt: iso(now.Add(-time.Hour)),
	}
}

func start(t *testing.T) (*dynamotest.Backend, *dynamodbstore.Store) {
	b := dynamotest.Start(t)
	return b, dynamodbstore.New(b.Client, b.LedgerTable(t))
}

func open(t *testing.T, path string) *d1import.Source {
	t.Helper()
	src, err := d1import.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// TestEachRowIsImportedOrRefusedWithItsReason: in every form of the
// export, good rows become records the service replays, field by field,
// and each bad row is refused with its reason and its key's prefix, the
// rest imported.
func TestEachRowIsImportedOrRefusedWithItsReason(t *testing.T) {
	upper := strings.ToUpper(uuid.NewString())
	quoted := uuid.NewString()
	collide := uuid.NewString()
	bad := func(change func(*d1importtest.Row)) d1importtest.Row {
		r := goodRow("alice")
		change(&r)
		return r
	}
	tests := []struct {
		name   string
		row    d1importtest.Row
		reason d1import.Reason // "" for imported
	}{
		{"good", goodRow("alice"), ""},
		{"uppercase key, as iOS writes it", bad(func(r *d1importtest.Row) { r.Key = upper }), ""},
		{"quoted key (a structured-field string)", bad(func(r *d1importtest.Row) { r.Key = `"` + quoted + `"` }), ""},
		{"status 599", bad(func(r *d1importtest.Row) { r.StatusCode = 599 }), ""},
		{"created_at with an offset", bad(func(r *d1importtest.Row) {
			r.CreatedAt = now.Add(-time.Hour).In(time.FixedZone("", 3600)).Format(time.RFC3339)
		}), ""},
		{"uppercase hash", bad(func(r *d1importtest.Row) { r.PayloadHash = strings.Repeat("AB", 32) }), ""},
		{"key not a UUID", bad(func(r *d1importtest.Row) { r.Key = "order-12345-retry" }), d1import.KeyNotUUID},
		{"key in braces", bad(func(r *d1importtest.Row) { r.Key = "{" + uuid.NewString() + "}" }), d1import.KeyNotUUID},
		{"empty user", bad(func(r *d1importtest.Row) { r.UserID = "" }), d1import.UserEmpty},
		{"body not JSON", bad(func(r *d1importtest.Row) { r.Body = `{"event":` }), d1import.BodyNotJSON},
		{"body empty", bad(func(r *d1importtest.Row) { r.Body = `` }), d1import.BodyNotJSON},
		{"status 99", bad(func(r *d1importtest.Row) { r.StatusCode = 99 }), d1import.StatusOutOfRange},
		{"status 600", bad(func(r *d1importtest.Row) { r.StatusCode = 600 }), d1import.StatusOutOfRange},
		{"status 201.5", bad(func(r *d1importtest.Row) { r.StatusCode = 201.5 }), d1import.StatusOutOfRange},
		{"status text", bad(func(r *d1importtest.Row) { r.StatusCode = "'created'" }), d1import.StatusOutOfRange},
		{"hash 63 digits", bad(func(r *d1importtest.Row) { r.PayloadHash = strings.Repeat("a", 63) }), d1import.HashNotHex},
		{"hash not hex", bad(func(r *d1importtest.Row) { r.PayloadHash = strings.Repeat("g", 64) }), d1import.HashNotHex},
		{"created_at SQLite's, no zone", bad(func(r *d1importtest.Row) { r.CreatedAt = "2026-12-01 09:30:00" }), d1import.CreatedAtBad},
		{"created_at not a time", bad(func(r *d1importtest.Row) { r.CreatedAt = "yesterday" }), d1import.CreatedAtBad},
		{"key differs only in case (lower)", bad(func(r *d1importtest.Row) { r.Key = collide }), d1import.KeyCaseCollision},
		{"key differs only in case (upper)", bad(func(r *d1importtest.Row) { r.Key = strings.ToUpper(collide) }), d1import.KeyCaseCollision},
		{"the same key of another user", bad(func(r *d1importtest.Row) { r.Key, r.UserID = collide, "bob" }), ""},
		{"body over 400 KB", bad(func(r *d1importtest.Row) { r.Body = `"` + strings.Repeat("x", 400<<10) + `"` }), d1import.TooLargeForRecord},
	}
	rows := make([]d1importtest.Row, len(tests))
	for i, tt := range tests {
		rows[i] = tt.row
	}
	for _, form := range d1importtest.Forms {
		t.Run(string(form), func(t *testing.T) {
			_, store := start(t)
			src := open(t, d1importtest.Write(t, t.TempDir(), form, rows))
			c, err := d1import.Import(context.Background(), src, store, d1import.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var wantRefused []d1import.Refusal
			imported := 0
			for _, tt := range tests {
				if tt.reason != "" {
					wantRefused = append(wantRefused, d1import.Refusal{KeyPrefix: fmt.Sprintf("%q", string([]rune(tt.row.Key)[:min(8, len(tt.row.Key))])), Reason: tt.reason})
					continue
				}
				imported++
			}
			sortRefusals(c.Refused)
			sortRefusals(wantRefused)
			if c.Rows != len(rows) || c.Read != len(rows) || c.Imported != imported || c.Present != 0 || c.Expired != 0 || !slices.Equal(c.Refused, wantRefused) {
				t.Fatalf("counts %+v\nwant %d rows, %d imported, refused %v", c, len(rows), imported, wantRefused)
			}
			for _, tt := range tests {
				if tt.reason != "" {
					continue
				}
				key, err := idempotency.ParseKey([]string{tt.row.Key})
				if err != nil {
					t.Fatal(err)
				}
				rec, found, err := store.Get(context.Background(), tt.row.UserID, key)
				if err != nil || !found {
					t.Fatalf("%s: record found %v, %v", tt.name, found, err)
				}
				created, _ := time.Parse(time.RFC3339Nano, tt.row.CreatedAt)
				want := idempotency.Record{
					UserID: tt.row.UserID, Key: key, PayloadHash: strings.ToLower(tt.row.PayloadHash), HashScheme: idempotency.HashSchemeD1JS,
					StatusCode: rec.StatusCode, ResponseBody: []byte(tt.row.Body), Method: "POST", Route: "/api/v1/sync/events",
					CreatedAt: created.UTC(), ExpiresAt: created.Add(idempotency.DefaultRetention).UTC().Truncate(time.Second),
				}
				if fmt.Sprint(rec) != fmt.Sprint(want) || fmt.Sprint(rec.StatusCode) != fmt.Sprint(tt.row.StatusCode) {
					t.Fatalf("%s: record\n%+v\nwant\n%+v", tt.name, rec, want)
				}
			}
		})
	}
}

func sortRefusals(r []d1import.Refusal) {
	slices.SortFunc(r, func(a, b d1import.Refusal) int {
		return strings.Compare(a.KeyPrefix+string(a.Reason), b.KeyPrefix+string(b.Reason))
	})
}

// TestARerunAndLiveRecordsAreNeverOverwritten: a second run finds every
// record present and changes none; a record the service wrote for a key
// before the import keeps its answer.
func TestARerunAndLiveRecordsAreNeverOverwritten(t *testing.T) {
	_, store := start(t)
	rows := []d1importtest.Row{goodRow("alice"), goodRow("alice"), goodRow("bob")}
	live := idempotency.Record{
		UserID: "bob", Key: rows[2].Key, PayloadHash: strings.Repeat("11", 32), StatusCode: 200, ResponseBody: []byte(`{"live":true}`),
		Method: "POST", Route: "/api/v1/sync/events", CreatedAt: now, ExpiresAt: now.Add(time.Hour).Truncate(time.Second),
	}
	if _, err := store.Insert(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	src := open(t, d1importtest.Write(t, t.TempDir(), d1importtest.SQLValues, rows))
	for run, want := range []d1import.Counts{{Imported: 2, Present: 1}, {Present: 3}} {
		c, err := d1import.Import(context.Background(), src, store, d1import.Options{})
		if err != nil || c.Imported != want.Imported || c.Present != want.Present || len(c.Refused) != 0 {
			t.Fatalf("run %d: %+v, %v; want %d imported, %d present", run+1, c, err, want.Imported, want.Present)
		}
	}
	got, _, err := store.Get(context.Background(), "bob", rows[2].Key)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(live) {
		t.Fatalf("the live record is now %+v, %v", got, err)
	}
}

// TestRowsPastTheRetentionAreSkipped: a row whose created_at plus the
// retention is past is counted expired and not written; the retention is
// the option's.
func TestRowsPastTheRetentionAreSkipped(t *testing.T) {
	_, store := start(t)
	old, recent := goodRow("alice"), goodRow("alice")
	old.CreatedAt = iso(now.Add(-49 * time.Hour))
	recent.CreatedAt = iso(now.Add(-47 * time.Hour))
	src := open(t, d1importtest.Write(t, t.TempDir(), d1importtest.Database, []d1importtest.Row{old, recent}))
	c, err := d1import.Import(context.Background(), src, store, d1import.Options{Retention: 48 * time.Hour})
	if err != nil || c.Imported != 1 || c.Expired != 1 {
		t.Fatalf("%+v, %v; want 1 imported, 1 expired", c, err)
	}
	if _, found, _ := store.Get(context.Background(), "alice", old.Key); found {
		t.Fatal("the expired row was written")
	}
	rec, found, _ := store.Get(context.Background(), "alice", recent.Key)
	created, _ := time.Parse(time.RFC3339Nano, recent.CreatedAt)
	if !found || !rec.ExpiresAt.Equal(created.Add(48*time.Hour).Truncate(time.Second)) {
		t.Fatalf("record %+v, want it to expire 48 h after %s", rec, recent.CreatedAt)
	}
}

// TestTheUserMapRenamesAndRefusesTheUnmapped: with a user map, each row is
// stored under its user's new id, and a row of an id the map lacks is
// refused; two old ids mapped to one new id collide on a shared key.
func TestTheUserMapRenamesAndRefusesTheUnmapped(t *testing.T) {
	_, store := start(t)
	userMap, err := d1import.ReadUserMap(strings.NewReader("old-alice,sub-alice\nold-bob,sub-merged\nold-bobby,sub-merged\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, carol, b1, b2 := goodRow("old-alice"), goodRow("old-carol"), goodRow("old-bob"), goodRow("old-bobby")
	b2.Key = strings.ToUpper(b1.Key)
	src := open(t, d1importtest.Write(t, t.TempDir(), d1importtest.SQLColumns, []d1importtest.Row{a, carol, b1, b2}))
	c, err := d1import.Import(context.Background(), src, store, d1import.Options{UserMap: userMap})
	if err != nil || c.Imported != 1 || len(c.Refused) != 3 {
		t.Fatalf("%+v, %v; want 1 imported, 3 refused", c, err)
	}
	reasons := map[d1import.Reason]int{}
	for _, r := range c.Refused {
		reasons[r.Reason]++
	}
	if reasons[d1import.UserNotMapped] != 1 || reasons[d1import.KeyCaseCollision] != 2 {
		t.Fatalf("refusals %v", c.Refused)
	}
	if _, found, _ := store.Get(context.Background(), "sub-alice", a.Key); !found {
		t.Fatal("the mapped row is not under its new id")
	}
	if _, found, _ := store.Get(context.Background(), "old-alice", a.Key); found {
		t.Fatal("the mapped row is under its old id")
	}
}

// TestTheUserMapIsRead: malformed maps are errors, not guesses.
func TestTheUserMapIsRead(t *testing.T) {
	for _, in := range []string{"a,b,c\n", "a\n", ",b\n", "a,\n", "a,b\na,c\n"} {
		if _, err := d1import.ReadUserMap(strings.NewReader(in)); err == nil {
			t.Errorf("%q read as a user map", in)
		}
	}
}

// TestADryRunWritesNothing: a dry run counts what it would write and
// sends nothing.
func TestADryRunWritesNothing(t *testing.T) {
	b, store := start(t)
	expired := goodRow("alice")
	expired.CreatedAt = iso(now.Add(-30 * 24 * time.Hour))
	badKey := goodRow("alice")
	badKey.Key = "nope"
	src := open(t, d1importtest.Write(t, t.TempDir(), d1importtest.SQLValues, []d1importtest.Row{goodRow("a"), goodRow("b"), expired, badKey}))
	b.Transport.Reset()
	c, err := d1import.Import(context.Background(), src, store, d1import.Options{DryRun: true})
	if err != nil || c.Imported != 2 || c.Expired != 1 || len(c.Refused) != 1 || c.Refused[0] != (d1import.Refusal{KeyPrefix: `"nope"`, Reason: d1import.KeyNotUUID}) {
		t.Fatalf("%+v, %v", c, err)
	}
	if n := b.Transport.Total(); n != 0 {
		t.Fatalf("a dry run made %d calls", n)
	}
}

// TestThrottledWritesAreRetried: writes throttled past the SDK's own
// retries are tried again by the import, and every row lands once.
func TestThrottledWritesAreRetried(t *testing.T) {
	b, store := start(t)
	rows := make([]d1importtest.Row, 40)
	for i := range rows {
		rows[i] = goodRow(fmt.Sprintf("user-%d", i%3))
	}
	src := open(t, d1importtest.Write(t, t.TempDir(), d1importtest.Database, rows))
	throttle := b.Transport.Throttle("PutItem", 12) // past the SDK's 3 attempts, for a few writes
	var progress []d1import.Counts
	c, err := d1import.Import(context.Background(), src, store, d1import.Options{
		Workers: 4, Progress: func(c d1import.Counts) { progress = append(progress, c) }, ProgressEvery: time.Millisecond,
	})
	if err != nil || c.Imported != len(rows) || c.Retries == 0 || throttle.Fired() != 12 {
		t.Fatalf("%+v, %v; throttled %d times; want every row imported after retries", c, err, throttle.Fired())
	}
	if len(progress) == 0 || progress[len(progress)-1].Imported != len(rows) {
		t.Fatalf("progress %+v; want a last report of every row", progress)
	}
	b.Transport.Reset()
	all, err := store.All(context.Background())
	if err != nil || len(all) != len(rows) {
		t.Fatalf("%d records, %v; want %d", len(all), err, len(rows))
	}
}

// TestAStoreThatFailsStopsTheImport: an error no retry gets past (here,
// no such table) stops the import with it.
func TestAStoreThatFailsStopsTheImport(t *testing.T) {
	b := dynamotest.Start(t)
	store := dynamodbstore.New(b.Client, "no-such-table-"+uuid.NewString()[:8])
	src := open(t, d1importtest.Write(t, t.TempDir(), d1importtest.SQLValues, []d1importtest.Row{goodRow("a"), goodRow("b")}))
	c, err := d1import.Import(context.Background(), src, store, d1import.Options{Workers: 1})
	if err == nil || c.Imported != 0 {
		t.Fatalf("%+v, %v; want an error and nothing imported", c, err)
	}
}

// TestAnExportWithoutTheLedgerIsRefused: a file that is neither the
// ledger's SQL nor a database holding it is an error on Open.
func TestAnExportWithoutTheLedgerIsRefused(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"other.sql":   "CREATE TABLE notes (id TEXT);",
		"garbage.sql": "this is not SQL",
		"empty.sql":   "",
	} {
		path := dir + "/" + name
		if err := writeFile(path, content); err != nil {
			t.Fatal(err)
		}
		if src, err := d1import.Open(context.Background(), path); err == nil {
			src.Close()
			t.Errorf("%s opened as an export", name)
		}
	}
}
