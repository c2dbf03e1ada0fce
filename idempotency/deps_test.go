package idempotency_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTheFlowKnowsNoAWS: the exactly-once flow is written against its own
// Store interface, so it can be read, tested and reused without DynamoDB.
func TestTheFlowKnowsNoAWS(t *testing.T) {
	for _, dep := range goListDeps(t, ".") {
		if strings.HasPrefix(dep, "github.com/aws/") {
			t.Errorf("package idempotency depends on %s", dep)
		}
	}
}

// TestPublicPackagesImportNothingInternal: the packages other modules
// import (examples/notes-api among them) reach nothing under internal/,
// directly or not, so that what they document is all they are.
func TestPublicPackagesImportNothingInternal(t *testing.T) {
	for _, dep := range goListDeps(t, "./...", "../errcode") {
		if strings.Contains(dep, "/sync-events/internal/") {
			t.Errorf("a public package depends on %s", dep)
		}
	}
}

// goListDeps lists the packages pkgs link, and fails if the listing names
// none of the module's own (so that a renamed directory cannot pass).
func goListDeps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !strings.Contains(string(out), "github.com/sync-events/sync-events/idempotency") {
		t.Fatalf("go list named %d packages, none of them this one", len(deps))
	}
	return deps
}
