package syncevent

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/canonuuid"
)

// Position is a place in one user's receive order: just after the event
// received at ReceivedAt with id ID. The zero Position is the start. It is
// the one type behind the paging cursor: the handler reads and writes it as
// a cursor, the events table as a sort key.
type Position struct {
	ReceivedAt time.Time
	ID         string
}

// IsStart reports whether p is the start of the order.
func (p Position) IsStart() bool { return p.ID == "" }

// SortKey is p as the events table orders it: the fixed-width receive
// time, then the id to break ties.
func (p Position) SortKey() string {
	return p.ReceivedAt.UTC().Format(TimestampLayout) + "#" + p.ID
}

// A cursor is 24 bytes, base64url without padding, so always 32
// characters: the receive time in milliseconds since the Unix epoch
// (big-endian, under 2^46, so before the year 4199, which makes the first
// three characters "AAA") and the event id's 16 bytes. The encoding has no
// spare bits, so every 32-character string of the URL-safe alphabet that
// starts with "AAA" is a position, and nothing else is: the OpenAPI
// document states exactly that pattern, and a client (or a fuzzer) can
// send nothing it admits that the API then refuses.
const (
	cursorBytes   = 24
	maxCursorMsec = 1 << 46
	// CursorPattern is the set of cursors, as a regular expression.
	CursorPattern = `^AAA[A-Za-z0-9_-]{29}$`
)

// Cursor is p as the API hands it to a client: opaque, URL-safe.
func (p Position) Cursor() string {
	var b [cursorBytes]byte
	binary.BigEndian.PutUint64(b[:8], uint64(p.ReceivedAt.UnixMilli()))
	// Ids are UUIDs: Parse refuses anything else on the way in.
	id := uuid.MustParse(p.ID)
	copy(b[8:], id[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ErrBadPosition reports a sort key or cursor that this package did not make.
var ErrBadPosition = errors.New("not an event position")

// ParseSortKey reads a sort key made by SortKey.
func ParseSortKey(key string) (Position, error) {
	at, id, ok := strings.Cut(key, "#")
	if !ok {
		return Position{}, ErrBadPosition
	}
	t, err := time.Parse(TimestampLayout, at)
	if err != nil {
		return Position{}, ErrBadPosition
	}
	canon, ok := canonuuid.Parse(id)
	if !ok || canon != id {
		return Position{}, ErrBadPosition
	}
	return Position{ReceivedAt: t, ID: id}, nil
}

// ParseCursor reads a cursor made by Cursor.
func ParseCursor(c string) (Position, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil || len(raw) != cursorBytes {
		return Position{}, ErrBadPosition
	}
	ms := binary.BigEndian.Uint64(raw[:8])
	if ms >= maxCursorMsec {
		return Position{}, ErrBadPosition
	}
	id, err := uuid.FromBytes(raw[8:])
	if err != nil {
		return Position{}, ErrBadPosition
	}
	return Position{ReceivedAt: time.UnixMilli(int64(ms)).UTC(), ID: id.String()}, nil
}
