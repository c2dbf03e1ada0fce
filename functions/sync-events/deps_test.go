package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLambdaBinaryLeavesOutTheDevBackends lists the packages each Lambda
// build links (every main package under functions/), as make build builds
// it (linux/arm64, lambda.norpc), and refuses the embedded backends (kumo,
// the public test kit) and the test and dev helpers: they would add
// megabytes and init time to every cold start, and none of them is meant
// to run in AWS.
func TestLambdaBinaryLeavesOutTheDevBackends(t *testing.T) {
	fns := lambdaFunctions(t)
	for _, fn := range fns {
		leavesOut(t, fn, goListDeps(t, fn, 50))
	}
	// Three functions today: a listing with fewer lists something else.
	if len(fns) < 3 {
		t.Fatalf("found the functions %v; the listing is not what this test expects", fns)
	}
}

// lambdaFunctions are the main packages under functions/: the Lambda
// binaries.
func lambdaFunctions(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

func leavesOut(t *testing.T, fn string, deps []string) {
	t.Helper()
	forbidden := []string{
		"github.com/sivchari/kumo",
		"github.com/sync-events/sync-events/internal/local", // every stand-in below it
		"github.com/sync-events/sync-events/internal/ddb/ddbtest",
		"github.com/sync-events/sync-events/idempotency/dynamodbstore/dynamotest",
		"github.com/coder/websocket",
		"github.com/sync-events/sync-events/openapi", "github.com/pb33f",
		"testing",
	}
	for _, dep := range deps {
		// The Streams client, which make run reads a stream with (its types
		// are service/dynamodb's too, and stay).
		if dep == "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams" {
			t.Errorf("the Lambda binary of %s links %s", fn, dep)
		}
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("the Lambda binary of %s links %s", fn, dep)
			}
		}
	}
}

// goListDeps lists the packages pkg links, as make build builds it
// (linux/arm64, lambda.norpc), and fails if there are fewer than least.
func goListDeps(t *testing.T, pkg string, least int) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "lambda.norpc", "-deps", "-f", "{{.ImportPath}}", pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < least {
		t.Fatalf("go list named %d packages; the listing is not what this test expects", len(deps))
	}
	return deps
}
