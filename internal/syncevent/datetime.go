package syncevent

import (
	"errors"
	"time"
)

// MaxOccurredAtLen bounds occurredAt. RFC 3339 lets the fraction of a
// second run on without end; 64 characters allow 34 fractional digits, far
// past any clock, and keep the value small wherever it is echoed (the 201,
// the ledger's stored answer, every page).
const MaxOccurredAtLen = 64

var errDateTime = errors.New("not an RFC 3339 date-time")

// ParseDateTime checks s against RFC 3339 section 5.6 "date-time" exactly:
//
//	full-date "T" partial-time [time-secfrac] ("Z" / ("+"/"-") hh ":" mm)
//
// with every field in range (months of 28 to 31 days, leap years, offsets
// up to 23:59). "T" and "Z" may be lowercase: ABNF literals are
// case-insensitive (RFC 5234 section 2.3), as the RFC's own note says. A
// space instead of "T" is not the grammar and is refused. Second 60 (a leap
// second) is accepted where one can occur: 23:59:60 in UTC, on the last day
// of a month (RFC 3339 section 5.7). It returns the instant, for callers
// that need one; the event keeps the text as sent.
func ParseDateTime(s string) (time.Time, error) {
	p := dtParser{s: s}
	year := p.digits(4, 0, 9999)
	p.lit('-')
	month := p.digits(2, 1, 12)
	p.lit('-')
	day := p.digits(2, 1, 31)
	p.litFold('T')
	hour := p.digits(2, 0, 23)
	p.lit(':')
	minute := p.digits(2, 0, 59)
	p.lit(':')
	second := p.digits(2, 0, 60)
	nanos := p.fraction()
	offset := p.offset()
	if p.err != nil || p.i != len(s) || day > daysIn(year, time.Month(month)) {
		return time.Time{}, errDateTime
	}
	leap := second == 60
	if leap {
		second = 59
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, nanos, time.UTC).Add(-offset)
	if leap && !isLeapSecondSlot(t) {
		return time.Time{}, errDateTime
	}
	return t, nil
}

// isLeapSecondSlot reports whether t (second 59 standing for 60) is
// 23:59:59 UTC on the last day of a month.
func isLeapSecondSlot(t time.Time) bool {
	return t.Hour() == 23 && t.Minute() == 59 && t.Day() == daysIn(t.Year(), t.Month())
}

func daysIn(year int, m time.Month) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// dtParser reads s left to right; the first mismatch sets err and every
// later step does nothing.
type dtParser struct {
	s   string
	i   int
	err error
}

func (p *dtParser) fail() { p.err = errDateTime }

func (p *dtParser) peek() byte {
	if p.err != nil || p.i >= len(p.s) {
		return 0
	}
	return p.s[p.i]
}

func (p *dtParser) lit(c byte) {
	if p.peek() != c {
		p.fail()
		return
	}
	p.i++
}

func (p *dtParser) litFold(upper byte) {
	if c := p.peek(); c != upper && c != upper+('a'-'A') {
		p.fail()
		return
	}
	p.i++
}

// digits reads exactly n decimal digits whose value is in [lo, hi].
func (p *dtParser) digits(n, lo, hi int) int {
	v := 0
	for range n {
		c := p.peek()
		if c < '0' || c > '9' {
			p.fail()
			return 0
		}
		v = v*10 + int(c-'0')
		p.i++
	}
	if v < lo || v > hi {
		p.fail()
	}
	return v
}

// fraction reads an optional "." 1*DIGIT and returns it in nanoseconds
// (digits past the ninth are valid but below a nanosecond).
func (p *dtParser) fraction() int {
	if p.peek() != '.' {
		return 0
	}
	p.i++
	nanos, scale, n := 0, 100_000_000, 0
	for c := p.peek(); c >= '0' && c <= '9'; c = p.peek() {
		nanos += int(c-'0') * scale
		scale /= 10
		p.i++
		n++
	}
	if n == 0 {
		p.fail()
	}
	return nanos
}

// offset reads "Z" or a numeric offset, hours 00-23 and minutes 00-59.
func (p *dtParser) offset() time.Duration {
	switch c := p.peek(); c {
	case 'Z', 'z':
		p.i++
		return 0
	case '+', '-':
		p.i++
		h := p.digits(2, 0, 23)
		p.lit(':')
		m := p.digits(2, 0, 59)
		d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute
		if c == '-' {
			d = -d
		}
		return d
	}
	p.fail()
	return 0
}
