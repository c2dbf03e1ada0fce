package api

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json"

	"github.com/sync-events/sync-events/internal/syncevent"
)

// MaxPageResponseBytes bounds a GET page, counted as the page stands in
// the function's response: a JSON string inside the JSON that the Lambda
// runtime sends back, where every quote and backslash of the page takes
// two bytes. Lambda refuses a synchronous response over 6 MB (the
// runtime emulator: 6 MiB + 100 bytes) and the client then gets a 5xx, so
// the page stops before this many bytes: 5 MiB, which leaves 1 MiB for the
// response's own fields and headers and stays under 6 MB even read as
// 6 000 000 bytes. One event takes at most about twice the largest body
// POST accepts (2 x 350 KiB), so every accepted event fits a page, and
// at least seven of the largest do.
const MaxPageResponseBytes = 5 << 20

// pageTail is room kept for what follows the events: the closing bracket,
// the cursor members and their values, escaped.
const pageTail = 192

// errEventTooLarge reports a stored event too large for any page; POST
// never stores one.
var errEventTooLarge = errors.New("a stored event is larger than a page may be")

// page builds a GET body event by event, within a count and a byte budget,
// from the position after. The events it is handed follow one another
// with no gap (eventstore.Store.Read stops at one), so where the page ends is
// where its reader resumes.
type page struct {
	limit, budget int
	body          []byte
	size          int // body's size once in the Lambda response
	count         int
	// at is where the page ends so far: where its reader resumes.
	at syncevent.Position
	// full: the page stopped at its count or byte budget with an event
	// waiting, so more pages follow now.
	full bool
}

func newPage(limit, budget int, after syncevent.Position) *page {
	p := &page{limit: limit, budget: budget - pageTail, body: []byte(`{"events":[`), at: after}
	p.size = responseSize(p.body)
	return p
}

// add appends ev if the page has room for it, and reports whether it did;
// the caller stops at the first event left out.
func (p *page) add(ev syncevent.Event) (bool, error) {
	if p.count == p.limit {
		p.full = true
		return false, nil
	}
	item, err := json.Marshal(ev.Listing())
	if err != nil {
		return false, fmt.Errorf("encode event for a page: %w", err)
	}
	n := responseSize(item) + 1 // and its comma
	if p.size+n > p.budget {
		if p.count == 0 {
			return false, fmt.Errorf("%w: %d bytes", errEventTooLarge, n)
		}
		p.full = true
		return false, nil
	}
	if p.count > 0 {
		p.body = append(p.body, ',')
	}
	p.body = append(p.body, item...)
	p.size += n
	p.count++
	p.at = ev.Position
	return true, nil
}

// finish closes the body: cursor is where to resume, always, at the head
// too; hasMore says whether more pages follow now; nextCursor is the
// cursor when they do and null otherwise, for clients that page until it
// is null.
func (p *page) finish() []byte {
	cursor := p.at.Cursor()
	p.body = append(p.body, `],"nextCursor":`...)
	if p.full {
		p.body = append(p.body, '"')
		p.body = append(p.body, cursor...)
		p.body = append(p.body, '"')
	} else {
		p.body = append(p.body, `null`...)
	}
	p.body = append(p.body, `,"cursor":"`...)
	p.body = append(p.body, cursor...)
	p.body = append(p.body, `","hasMore":`...)
	p.body = strconv.AppendBool(p.body, p.full)
	return append(p.body, '}')
}

// responseSize is an upper bound of b's length once written as a JSON
// string by encoding/json without HTML escaping, as aws-lambda-go writes
// the response body: quote and backslash take two bytes, U+2028 and U+2029
// six, any other control byte or invalid UTF-8 at most six. A page written
// by the JSON encoder holds no raw control bytes or invalid UTF-8, so for a
// page the bound is exact but for those.
func responseSize(b []byte) int {
	n := len(b)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				n++
			case c < 0x20:
				n += 5
			}
			i++
			continue
		}
		r, w := utf8.DecodeRune(b[i:])
		switch {
		case r == '\u2028' || r == '\u2029':
			n += 3
		case r == utf8.RuneError && w == 1:
			n += 5
		}
		i += w
	}
	return n
}
