package rie

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds, into dir, the bootstrap of the function package pkg (a
// directory, with the Lambda build's tags and without cgo, for this
// machine) and aws-lambda-rie (pinned in the module's tools/go.mod), and
// returns their paths. It leaves out -trimpath, which changes nothing a
// test sees and would compile every dependency again beside the test's
// own build: with CGO_ENABLED=0 in the test's environment too (make test
// sets it), the two builds share the build cache.
func Build(dir, pkg string) (bootstrap, emulator string, _ error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	bootstrap, emulator = filepath.Join(dir, "bootstrap"), filepath.Join(dir, "aws-lambda-rie")
	for _, b := range []struct{ dir, out, pkg string }{
		{pkg, bootstrap, "."},
		{filepath.Join(root, "tools"), emulator, "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"},
	} {
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", b.out, b.pkg)
		cmd.Dir, cmd.Env = b.dir, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("build %s: %w\n%s", b.pkg, err, out)
		}
	}
	return bootstrap, emulator, nil
}
