package config

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(map[string]string{EnvIdempotencyTable: "ledger", EnvEventsTable: "events"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{IdempotencyTable: "ledger", EventsTable: "events", LedgerRetention: 7 * 24 * time.Hour, MaxBodyBytes: 256 << 10, LogLevel: slog.LevelInfo, ReplayCacheBytes: 16 << 20,
		ChangesPerSecond: 10, ChangesBurst: 60, ReadsPerSecond: 20, ReadsBurst: 60, SequencedSpaceWrites: true}
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

func TestLoadEverything(t *testing.T) {
	c, err := Load(env(map[string]string{
		EnvIdempotencyTable: "l.1", EnvEventsTable: "e_2", EnvEndpoint: "http://localhost:8000",
		EnvRetention: "48h", EnvMaxBodyBytes: "1024", EnvLogLevel: "debug", EnvReplayCacheBytes: "0",
		EnvChangesPerSecond: "0", EnvChangesBurst: "5", EnvReadsPerSecond: "3", EnvReadsBurst: "4", EnvSpaceWrites: "head",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoint != "http://localhost:8000" || c.LedgerRetention != 48*time.Hour || c.MaxBodyBytes != 1024 || c.LogLevel != slog.LevelDebug || c.ReplayCacheBytes != 0 ||
		c.ChangesPerSecond != 0 || c.ChangesBurst != 5 || c.ReadsPerSecond != 3 || c.ReadsBurst != 4 || c.SequencedSpaceWrites {
		t.Fatalf("got %+v", c)
	}
}

func TestLoadRefusesBadValues(t *testing.T) {
	base := map[string]string{EnvIdempotencyTable: "ledger", EnvEventsTable: "events"}
	tests := []struct{ name, value string }{
		{EnvIdempotencyTable, ""},
		{EnvEventsTable, "no spaces allowed"},
		{EnvEventsTable, "ab"},
		{EnvEndpoint, "localhost:8000"},
		{EnvEndpoint, "ftp://host"},
		{EnvRetention, "7d"},
		{EnvRetention, "30m"},
		{EnvRetention, "9000h"},
		{EnvMaxBodyBytes, "0"},
		{EnvMaxBodyBytes, "1MB"},
		{EnvMaxBodyBytes, "10000000"},
		{EnvLogLevel, "LOUD"},
		{EnvSpaceWrites, "Sequenced"},
		{EnvSpaceWrites, "off"},
		{EnvReplayCacheBytes, "-1"},
		{EnvReplayCacheBytes, "16MiB"},
		{EnvReplayCacheBytes, "99999999999"},
		{EnvChangesPerSecond, "-1"},
		{EnvChangesPerSecond, "ten"},
		{EnvChangesBurst, "0"},
		{EnvReadsPerSecond, "10001"},
		{EnvReadsBurst, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			kv := map[string]string{}
			for k, v := range base {
				kv[k] = v
			}
			kv[tt.name] = tt.value
			_, err := Load(env(kv))
			if err == nil || !strings.Contains(err.Error(), tt.name) {
				t.Fatalf("err = %v, want one naming %s", err, tt.name)
			}
		})
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	_, err := Load(env(map[string]string{EnvRetention: "soon"}))
	for _, name := range []string{EnvIdempotencyTable, EnvEventsTable, EnvRetention} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("err = %v, want it to name %s", err, name)
		}
	}
}
