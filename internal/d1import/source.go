package d1import

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the "sqlite" driver: pure Go, no cgo
)

// Table is the original's ledger table, as wrangler d1 export names it.
const Table = "idempotency_ledger"

// sqliteMagic opens every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// Source is an export of the original's ledger, open for reading.
type Source struct {
	db *sql.DB
}

// Open opens the export at path: a SQLite database file (the D1 database
// itself, or one made from the export), read only, or the .sql file that
// `wrangler d1 export` writes, which is run as a script into an
// in-memory database; SQLite reads it, both forms of its INSERT (with and
// without the column names) alike. The file's first bytes tell which.
func Open(ctx context.Context, path string) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if bytes.Equal(head[:n], sqliteMagic) {
		return openDatabase(ctx, path)
	}
	return openScript(ctx, path)
}

func openDatabase(ctx context.Context, path string) (*Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	s := &Source{db: db}
	if err := s.check(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func openScript(ctx context.Context, path string) (*Source, error) {
	script, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	// One connection: each connection to :memory: is a database of its own.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, string(script)); err != nil {
		db.Close()
		return nil, fmt.Errorf("run %s as SQL: %w", filepath.Base(path), err)
	}
	s := &Source{db: db}
	if err := s.check(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// check makes sure the export holds the ledger table with its columns.
func (s *Source) check(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "SELECT key, user_id, payload_hash, status_code, response_body, created_at FROM "+Table+" LIMIT 0")
	if err != nil {
		return fmt.Errorf("the export has no %s table with the original's columns: %w", Table, err)
	}
	return rows.Close()
}

// Close releases the database.
func (s *Source) Close() error { return s.db.Close() }

// Count is the number of rows in the ledger table.
func (s *Source) Count(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+Table).Scan(&n)
	return n, err
}

// Row is one row of the ledger as the export holds it; each column as
// SQLite gives it (a string, an int64, a float64, []byte, or nil), for the
// import to check rather than convert.
type Row struct {
	Key, UserID, PayloadHash, StatusCode, ResponseBody, CreatedAt any
}

// each calls fn for every row, in the table's order, with only the
// columns named (the rest nil).
func (s *Source) each(ctx context.Context, all bool, fn func(Row) error) error {
	q := "SELECT key, user_id FROM " + Table
	if all {
		q = "SELECT key, user_id, payload_hash, status_code, response_body, created_at FROM " + Table
	}
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("read %s: %w", Table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Row
		dest := []any{&r.Key, &r.UserID}
		if all {
			dest = append(dest, &r.PayloadHash, &r.StatusCode, &r.ResponseBody, &r.CreatedAt)
		}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read %s: %w", Table, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", Table, err)
	}
	return nil
}
