package rie

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds, into dir, the bootstrap of the function package pkg (a
// directory, with the Lambda build's flags, for this machine) and
// aws-lambda-rie (pinned in the module's tools/go.mod), and returns their
// paths.
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
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", b.out, b.pkg)
		cmd.Dir, cmd.Env = b.dir, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("build %s: %w\n%s", b.pkg, err, out)
		}
	}
	return bootstrap, emulator, nil
}
