package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNothingInternal lists every package this module builds and
// tests with, and refuses any under the repository's internal/: the notes
// API is what a team outside the repository can write, with the public
// packages alone. (Go would refuse such an import anyway; the listing says
// so for dependencies of dependencies too.)
func TestImportsNothingInternal(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	public := 0
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/sync-events/sync-events/internal/") {
			t.Errorf("the notes API depends on %s", dep)
		}
		if strings.HasPrefix(dep, "github.com/sync-events/sync-events/idempotency") {
			public++
		}
	}
	// A listing that names none of the public packages lists something else.
	if public < 3 {
		t.Fatalf("go list named %d packages, %d of them the repository's idempotency packages", len(deps), public)
	}
}
