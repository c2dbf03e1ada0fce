package syncevent

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency"
)

// Position is a place in one user's commit order: just after the event at
// it. The one type behind the paging cursor: the handler reads and writes
// it as a cursor, the events table as a sort key.
//
// An event has a sequence number, Seq: 1 for the user's first, then one
// more for each event in the order their transactions committed, with no
// gaps (package ddb keeps it so). Events stored before sequence numbers
// existed have a legacy position, their receive time and id instead, and
// all of them come before sequence 1. The zero Position is the start.
type Position struct {
	Seq uint64
	// The legacy position: set only by ParseSortKey and ParseCursor.
	legacyAt time.Time
	legacyID string
}

// At is the position of the event with sequence number seq.
func At(seq uint64) Position { return Position{Seq: seq} }

// IsStart reports whether p is the start of the order.
func (p Position) IsStart() bool { return p.Seq == 0 && p.legacyID == "" }

// IsLegacy reports a position of an event stored before sequence numbers.
func (p Position) IsLegacy() bool { return p.legacyID != "" }

// seqPrefix starts a sequence sort key, and a sequence cursor. It sorts
// after every digit, so after every legacy sort key (which starts with a
// four-digit year).
const seqPrefix = "p"

// SortKey is p as the events table orders it: "p" and the sequence number
// in 16 hexadecimal digits, or for a legacy position the fixed-width
// receive time and the id. "" for the start.
func (p Position) SortKey() string {
	switch {
	case p.IsLegacy():
		return p.legacyAt.UTC().Format(TimestampLayout) + "#" + p.legacyID
	case p.Seq == 0:
		return ""
	}
	return seqKey(p.Seq)
}

func seqKey(seq uint64) string { return fmt.Sprintf("%s%016x", seqPrefix, seq) }

// Cursors. A sequence cursor is the sort key, "p" and 16 lowercase
// hexadecimal digits, so every such string is a position and nothing else
// is; "p0000000000000000" is the start. A legacy cursor, handed out before
// sequence numbers, is 24 bytes, base64url without padding, so always 32
// characters: the receive time in milliseconds since the Unix epoch
// (big-endian, under 2^46, which makes the first three characters "AAA")
// and the event id's 16 bytes; every such string is a position too. The
// OpenAPI document states exactly this pattern, so a client (or a fuzzer)
// can send nothing it admits that the API then refuses.
const (
	legacyCursorBytes = 24
	maxCursorMsec     = 1 << 46
	// CursorPattern is the set of cursors, as a regular expression.
	CursorPattern = `^(p[0-9a-f]{16}|AAA[A-Za-z0-9_-]{29})$`
)

// Cursor is p as the API hands it to a client: opaque, URL-safe.
func (p Position) Cursor() string {
	if !p.IsLegacy() {
		return seqKey(p.Seq)
	}
	var b [legacyCursorBytes]byte
	binary.BigEndian.PutUint64(b[:8], uint64(p.legacyAt.UnixMilli()))
	// legacyID was read as a canonical UUID by whichever parser set it.
	id, _ := uuid.Parse(p.legacyID)
	copy(b[8:], id[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ErrBadPosition reports a sort key or cursor that this package did not make.
var ErrBadPosition = errors.New("not an event position")

// ParseSortKey reads a sort key made by SortKey.
func ParseSortKey(key string) (Position, error) {
	if hex, ok := strings.CutPrefix(key, seqPrefix); ok {
		return parseSeq(hex)
	}
	at, id, ok := strings.Cut(key, "#")
	if !ok {
		return Position{}, ErrBadPosition
	}
	t, err := time.Parse(TimestampLayout, at)
	if err != nil {
		return Position{}, ErrBadPosition
	}
	canon, ok := idempotency.ParseUUID(id)
	if !ok || canon != id {
		return Position{}, ErrBadPosition
	}
	return Position{legacyAt: t, legacyID: id}, nil
}

// parseSeq reads exactly 16 lowercase hexadecimal digits.
func parseSeq(hex string) (Position, error) {
	if len(hex) != 16 || strings.ToLower(hex) != hex {
		return Position{}, ErrBadPosition
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return Position{}, ErrBadPosition
	}
	return Position{Seq: seq}, nil
}

// ParseCursor reads a cursor made by Cursor.
func ParseCursor(c string) (Position, error) {
	if hex, ok := strings.CutPrefix(c, seqPrefix); ok {
		return parseSeq(hex)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil || len(raw) != legacyCursorBytes {
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
	return Position{legacyAt: time.UnixMilli(int64(ms)).UTC(), legacyID: id.String()}, nil
}
