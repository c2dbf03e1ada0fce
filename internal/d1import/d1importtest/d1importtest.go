// Package d1importtest makes exports of the original's ledger for tests,
// as `wrangler d1 export` writes them (both forms of its INSERT) and as a
// SQLite database file, and runs the JavaScript implementation of the
// original (idempotency/testdata/d1original) under node.
package d1importtest

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// Row is a row of idempotency_ledger as the test wants it exported: the
// status code is any value (an int, a float, a string), so that a row the
// original's schema would type oddly can be made.
type Row struct {
	Key         string `json:"key"`
	UserID      string `json:"user_id"`
	PayloadHash string `json:"payload_hash"`
	StatusCode  any    `json:"status_code"`
	Body        string `json:"response_body"`
	CreatedAt   string `json:"created_at"`
}

// Form is a form of the export.
type Form string

// The forms: wrangler's .sql without and with column names, and a
// SQLite database file.
const (
	SQLValues  Form = "sql"
	SQLColumns Form = "sql-columns"
	Database   Form = "db"
)

// Forms lists them.
var Forms = []Form{SQLValues, SQLColumns, Database}

// schema is the original's table, as its documentation gives it.
const schema = `CREATE TABLE idempotency_ledger (
  key TEXT NOT NULL,
  user_id TEXT NOT NULL,
  payload_hash TEXT NOT NULL,
  status_code INTEGER NOT NULL,
  response_body TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(key, user_id)
);`

// Script is rows as the .sql file wrangler d1 export writes, with the
// column names in each INSERT or without.
func Script(rows []Row, withColumns bool) string {
	var b strings.Builder
	b.WriteString("PRAGMA defer_foreign_keys=TRUE;\n" + schema + "\n")
	for _, r := range rows {
		b.WriteString(`INSERT INTO "idempotency_ledger" `)
		if withColumns {
			b.WriteString(`("key","user_id","payload_hash","status_code","response_body","created_at") `)
		}
		fmt.Fprintf(&b, "VALUES(%s,%s,%s,%s,%s,%s);\n", literal(r.Key), literal(r.UserID), literal(r.PayloadHash),
			literal(r.StatusCode), literal(r.Body), literal(r.CreatedAt))
	}
	return b.String()
}

// literal is v as an SQL literal.
func literal(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case float64:
		return fmt.Sprintf("%g", x)
	default:
		return fmt.Sprint(x)
	}
}

// Write writes rows to a file of form in dir and returns its path.
func Write(t testing.TB, dir string, form Form, rows []Row) string {
	t.Helper()
	switch form {
	case SQLValues, SQLColumns:
		path := filepath.Join(dir, "ledger-"+string(form)+".sql")
		if err := os.WriteFile(path, []byte(Script(rows, form == SQLColumns)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := filepath.Join(dir, "ledger.sqlite3")
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// One transaction: SQLite would otherwise commit each row to disk.
	if _, err := db.Exec("BEGIN;\n" + Script(rows, false) + "COMMIT;\n"); err != nil {
		t.Fatalf("make the database: %v", err)
	}
	return path
}

// Original runs the original's JavaScript (cli.mjs in
// idempotency/testdata/d1original) on cmd and decodes its answer into
// out. It skips the test where node is missing; CI has it.
func Original(t testing.TB, cmd, out any) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH: the original's JavaScript cannot run")
	}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no source path for d1importtest")
	}
	dir := filepath.Join(filepath.Dir(self), "..", "..", "..", "idempotency", "testdata", "d1original")
	in, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command("node", "cli.mjs")
	c.Dir = dir
	c.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	got, err := c.Output()
	if err != nil {
		t.Fatalf("node cli.mjs: %v\n%s", err, stderr.Bytes())
	}
	if err := json.Unmarshal(got, out); err != nil {
		t.Fatalf("node's answer: %v", err)
	}
}

// Served is what the original answered a list of requests, and the
// ledger rows it stored.
type Served struct {
	Answers []struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	} `json:"answers"`
	Rows []Row `json:"rows"`
}

// Request is one request to the original: its Idempotency-Key as sent,
// the user, the body, and the time its row is stored with (empty: now).
type Request struct {
	Key       string `json:"key"`
	User      string `json:"user"`
	Body      string `json:"body"`
	CreatedAt string `json:"createdAt,omitempty"`
}

// Serve runs reqs through the original's idempotentMutation, in order.
func Serve(t testing.TB, reqs []Request) Served {
	t.Helper()
	var s Served
	Original(t, map[string]any{"serve": reqs}, &s)
	return s
}
