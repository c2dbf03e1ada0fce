package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest"
	"github.com/sync-events/sync-events/internal/d1import/d1importtest"
)

// EnvRateRows, set to a number of rows, runs TestImportRate: the
// measurement of docs/performance.md, "Cut-over import".
const EnvRateRows = "D1IMPORT_RATE_ROWS"

// EnvRateDir, if set, is a folder where TestImportRate leaves the
// exports and the command it built.
const EnvRateDir = "D1IMPORT_RATE_DIR"

// TestImportRate builds the command, makes an export of $D1IMPORT_RATE_ROWS
// rows (1,000 users, 7% of keys uppercase, a 201 answer of ~170 bytes
// each, created within the last three days) in each form, and imports it
// into a fresh ledger table of the test's backend (kumo in this process,
// or DYNAMODB_ENDPOINT) with the command in a process of its own: rows
// per second, and that process's peak resident memory (VmHWM, read from
// /proc while it runs: a child's rusage would count the memory of the
// test process it was forked from, kumo's tables and all).
func TestImportRate(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(EnvRateRows))
	if n <= 0 {
		t.Skip(EnvRateRows + " is not set: the import's rate is measured on demand (docs/performance.md)")
	}
	dir := t.TempDir()
	if keep := os.Getenv(EnvRateDir); keep != "" {
		dir = keep // the exports and the binary stay, to measure again by hand
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rows := rateRows(n)
	b := dynamotest.Start(t)
	for _, form := range []d1importtest.Form{d1importtest.SQLValues, d1importtest.Database} {
		path := d1importtest.Write(t, dir, form, rows)
		info, _ := os.Stat(path)
		table := b.LedgerTable(t)
		cmd := exec.CommandContext(context.Background(), bin, "-table", table, path)
		cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT="+b.Endpoint)
		start := time.Now()
		var stdout strings.Builder
		cmd.Stdout = &stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		peak := watchPeak(cmd.Process.Pid)
		err := cmd.Wait()
		elapsed := time.Since(start)
		out := stdout.String()
		if err != nil {
			t.Fatalf("%s: %v\n%s", form, err, out)
		}
		if !strings.Contains(out, fmt.Sprintf("imported %d\n", n)) {
			t.Fatalf("%s: %s", form, out)
		}
		maxKB := peak()
		t.Logf("%s on %s: %d rows (export %.1f MB) in %s: %.0f rows/s; peak RSS %.0f MB",
			form, b.Name, n, float64(info.Size())/1e6, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), float64(maxKB)/1024)
	}
}

// watchPeak polls the VmHWM of process pid every 50 ms; the function it
// returns stops and gives the last value read, in KiB (0 without /proc).
func watchPeak(pid int) func() int {
	var last atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
						last.Store(kb)
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() int {
		close(done)
		<-stopped
		return int(last.Load())
	}
}

func rateRows(n int) []d1importtest.Row {
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Now().UTC()
	rows := make([]d1importtest.Row, n)
	for i := range rows {
		key := uuid.NewString()
		if r.IntN(100) < 7 {
			key = strings.ToUpper(key)
		}
		created := now.Add(-time.Duration(r.Int64N(int64(72 * time.Hour))))
		rows[i] = d1importtest.Row{
			Key: key, UserID: fmt.Sprintf("auth0|%024d", r.IntN(1000)),
			PayloadHash: fmt.Sprintf("%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()),
			StatusCode:  201,
			Body: fmt.Sprintf(`{"id":%q,"type":"note.created","occurredAt":%q,"receivedAt":%q}`,
				uuid.NewString(), created.Add(-time.Second).Format(time.RFC3339Nano), created.Format("2006-01-02T15:04:05.000Z")),
			CreatedAt: created.Format("2006-01-02T15:04:05.000Z"),
		}
	}
	return rows
}
