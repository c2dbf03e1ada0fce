package syncevent

import (
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/sync-events/sync-events/internal/idempotency"
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

// Cursor is p as the API hands it to a client: opaque, URL-safe.
func (p Position) Cursor() string {
	return base64.RawURLEncoding.EncodeToString([]byte(p.SortKey()))
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
	canon, err := idempotency.ParseUUID(id, ErrBadPosition)
	if err != nil || canon != id {
		return Position{}, ErrBadPosition
	}
	return Position{ReceivedAt: t, ID: id}, nil
}

// ParseCursor reads a cursor made by Cursor.
func ParseCursor(c string) (Position, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || c == "" {
		return Position{}, ErrBadPosition
	}
	return ParseSortKey(string(raw))
}
