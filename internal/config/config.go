// Package config reads the service's settings from the environment, once,
// at start-up, into a typed struct, and refuses a bad value with a message
// that names the variable. It owns no defaults of the AWS SDK itself.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/sync-events/sync-events/idempotency"
)

// Config is everything the service reads from its environment.
type Config struct {
	// IdempotencyTable and EventsTable are the DynamoDB table names.
	IdempotencyTable string
	EventsTable      string
	// Endpoint overrides the DynamoDB endpoint (DynamoDB Local, moto,
	// dynoxide, the embedded kumo); empty means the AWS default for the region.
	Endpoint string
	// LedgerRetention is how long a ledger record answers retries (the
	// events' retention is EventRetention's, the retention function's).
	LedgerRetention time.Duration
	// MaxBodyBytes bounds a request body, after base64 decoding.
	MaxBodyBytes int
	// LogLevel is the least severe level logged.
	LogLevel slog.Level
	// ReplayCacheBytes bounds the memory an execution environment keeps
	// ledger records in to answer retries without DynamoDB; 0 turns it off.
	ReplayCacheBytes int
	// ChangesPerSecond and ChangesBurst are each user's rate of mutations,
	// kept in DynamoDB on the user's head and written with each mutation;
	// ChangesPerSecond 0 turns the limit off.
	ChangesPerSecond, ChangesBurst int
	// ReadsPerSecond and ReadsBurst are each user's rate of reads, per
	// execution environment; ReadsPerSecond 0 turns the limit off.
	ReadsPerSecond, ReadsBurst int
	// SequencedSpaceWrites turns on the busy-space path: for a moment
	// after a commit to a space finds its head moved, an execution
	// environment accepts that space's writes, and the sequencer places
	// them (docs/design.md, "A busy space"). Off, every write commits at
	// its stream's head.
	SequencedSpaceWrites bool
}

// The variables, as the template declares them.
const (
	EnvIdempotencyTable = "IDEMPOTENCY_TABLE"
	EnvEventsTable      = "EVENTS_TABLE"
	EnvEndpoint         = "DYNAMODB_ENDPOINT"
	EnvRetention        = "IDEMPOTENCY_RETENTION"
	// EnvEventRetentionDays is how many days an event stays (the
	// retention function's; unset or 0 in the template keeps events).
	EnvEventRetentionDays = "EVENT_RETENTION_DAYS"
	EnvMaxBodyBytes       = "MAX_BODY_BYTES"
	EnvLogLevel           = "LOG_LEVEL"
	EnvReplayCacheBytes   = "REPLAY_CACHE_BYTES"
	EnvChangesPerSecond   = "CHANGES_PER_SECOND"
	EnvChangesBurst       = "CHANGES_BURST"
	EnvReadsPerSecond     = "READS_PER_SECOND"
	EnvReadsBurst         = "READS_BURST"
	// EnvSpaceWrites is "sequenced" (the default) or "head" (every write
	// at its head: the operator's switch if the sequencer is down).
	EnvSpaceWrites = "SPACE_WRITES"
)

// The values of EnvSpaceWrites.
const (
	SpaceWritesSequenced = "sequenced"
	SpaceWritesHead      = "head"
)

// Variables lists every variable Load reads; the template test holds the
// template to it.
var Variables = []string{
	EnvIdempotencyTable, EnvEventsTable, EnvEndpoint, EnvRetention, EnvMaxBodyBytes, EnvLogLevel, EnvReplayCacheBytes,
	EnvChangesPerSecond, EnvChangesBurst, EnvReadsPerSecond, EnvReadsBurst, EnvSpaceWrites,
}

// Defaults for the optional variables.
const (
	DefaultMaxBodyBytes = 256 << 10
	// DefaultReplayCacheBytes is 16 MiB: tens of thousands of records (a
	// stored 201 is a few hundred bytes) in a 256 MB function.
	DefaultReplayCacheBytes = 16 << 20
	// Each user's mutations: 10 a second, 60 at once. A device back online
	// sends its queue in batches of up to 98 events, a few requests a
	// second; a client looping on mutations is held to 10 a second.
	DefaultChangesPerSecond, DefaultChangesBurst = 10, 60
	// Each user's reads in one environment: 20 a second, 60 at once (a
	// catching-up device pulls pages back to back).
	DefaultReadsPerSecond, DefaultReadsBurst = 20, 60
)

// Bounds: a retention under an hour would expire records while a client is
// still retrying; a body over 350 KiB could not fit one 400 KB DynamoDB item.
const (
	minLedgerRetention = time.Hour
	maxLedgerRetention = 365 * 24 * time.Hour
	MaxMaxBodyBytes    = 350 << 10
	// maxReplayCacheBytes keeps the cache under a quarter of the largest
	// Lambda memory size (10,240 MB).
	maxReplayCacheBytes = 2560 << 20
)

// Defaults is the configuration with every default and no table names.
func Defaults() Config {
	return Config{
		LedgerRetention: idempotency.DefaultRetention, MaxBodyBytes: DefaultMaxBodyBytes, LogLevel: slog.LevelInfo, ReplayCacheBytes: DefaultReplayCacheBytes,
		ChangesPerSecond: DefaultChangesPerSecond, ChangesBurst: DefaultChangesBurst,
		ReadsPerSecond: DefaultReadsPerSecond, ReadsBurst: DefaultReadsBurst,
		SequencedSpaceWrites: true,
	}
}

// DynamoDB's rule for table names.
var tableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// WholeNumber reads v as a number from lo to hi written as a number is,
// no sign and no leading zero: what the template's AllowedPatterns admit,
// so that deploy and start-up agree.
func WholeNumber(v string, lo, hi int) (int, bool) {
	n, err := strconv.Atoi(v)
	return n, err == nil && strconv.Itoa(n) == v && n >= lo && n <= hi
}

// Load reads the configuration through getenv (os.Getenv in production).
// All problems are reported together.
func Load(getenv func(string) string) (Config, error) {
	c := Defaults()
	var errs []error
	fail := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{name}, args...)...))
	}

	tables := []struct {
		name string
		dst  *string
	}{{EnvIdempotencyTable, &c.IdempotencyTable}, {EnvEventsTable, &c.EventsTable}}
	for _, t := range tables {
		name, dst := t.name, t.dst
		switch v := getenv(name); {
		case v == "":
			fail(name, "is required")
		case !tableName.MatchString(v):
			fail(name, "%q is not a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -)", v)
		default:
			*dst = v
		}
	}
	if v := getenv(EnvEndpoint); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fail(EnvEndpoint, "%q is not an http(s) URL", v)
		} else {
			c.Endpoint = v
		}
	}
	if v := getenv(EnvRetention); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < minLedgerRetention || d > maxLedgerRetention {
			fail(EnvRetention, "%q must be a duration from %v to %v, such as 168h", v, minLedgerRetention, maxLedgerRetention)
		} else {
			c.LedgerRetention = d
		}
	}
	ints := []struct {
		name     string
		dst      *int
		min, max int
		what     string
	}{
		{EnvMaxBodyBytes, &c.MaxBodyBytes, 1, MaxMaxBodyBytes, "bytes from 1"},
		{EnvReplayCacheBytes, &c.ReplayCacheBytes, 0, maxReplayCacheBytes, "bytes from 0 (off)"},
		{EnvChangesPerSecond, &c.ChangesPerSecond, 0, 10_000, "mutations a second from 0 (off)"},
		{EnvChangesBurst, &c.ChangesBurst, 1, 100_000, "mutations from 1"},
		{EnvReadsPerSecond, &c.ReadsPerSecond, 0, 10_000, "reads a second from 0 (off)"},
		{EnvReadsBurst, &c.ReadsBurst, 1, 100_000, "reads from 1"},
	}
	for _, i := range ints {
		v := getenv(i.name)
		if v == "" {
			continue
		}
		if n, ok := WholeNumber(v, i.min, i.max); !ok {
			fail(i.name, "%q must be a whole number of %s to %d", v, i.what, i.max)
		} else {
			*i.dst = n
		}
	}
	switch v := getenv(EnvSpaceWrites); v {
	case "", SpaceWritesSequenced:
	case SpaceWritesHead:
		c.SequencedSpaceWrites = false
	default:
		fail(EnvSpaceWrites, "%q must be %s or %s", v, SpaceWritesSequenced, SpaceWritesHead)
	}
	if v := getenv(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			fail(EnvLogLevel, "%q must be DEBUG, INFO, WARN or ERROR", v)
		}
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

// EventRetention is how long an event stays, from EnvEventRetentionDays:
// a whole number of days from 1 to 36500.
func EventRetention(getenv func(string) string) (time.Duration, error) {
	days, ok := WholeNumber(getenv(EnvEventRetentionDays), 1, 36500)
	if !ok {
		return 0, fmt.Errorf("%s must be a whole number of days from 1 to 36500", EnvEventRetentionDays)
	}
	return time.Duration(days) * 24 * time.Hour, nil
}
