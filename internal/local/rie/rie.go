// Package rie runs a Lambda function's bootstrap under the Lambda Runtime
// Interface Emulator (aws-lambda-rie, the program `sam local invoke` runs
// inside its container) on loopback ports, and invokes it. It gives the
// tests and `make invoke` the real binary, the real Runtime API and the real
// invoke protocol without Docker. It is never part of the Lambda binary.
package rie

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// Options say what to run.
type Options struct {
	RIE       string   // path to aws-lambda-rie
	Bootstrap string   // path to the function's bootstrap
	Env       []string // the function's own variables, KEY=value, on top of Lambda's
	Stderr    io.Writer
	Stdout    io.Writer
}

// Function is a running emulator with its function.
type Function struct {
	cmd    *exec.Cmd
	invoke string
	done   chan struct{}
}

// Start starts the emulator; the function itself starts on the first Invoke,
// as in Lambda. The emulator's ports are picked free just before it binds
// them, so another process can take one in between: then it tries again.
func Start(opts Options) (*Function, error) {
	var err error
	for range 3 {
		var f *Function
		if f, err = start(opts); err == nil {
			return f, nil
		}
	}
	return nil, err
}

func start(opts Options) (*Function, error) {
	rieAddr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	apiAddr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(opts.RIE,
		"--runtime-interface-emulator-address", rieAddr,
		"--runtime-api-address", apiAddr,
		"--log-level", "error",
		opts.Bootstrap)
	cmd.Env = append(lambdaEnv(), opts.Env...)
	cmd.Stdout, cmd.Stderr = opts.Stdout, opts.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", opts.RIE, err)
	}
	f := &Function{cmd: cmd, invoke: "http://" + rieAddr + "/2015-03-31/functions/function/invocations", done: make(chan struct{})}
	go func() { cmd.Wait(); close(f.done) }() //nolint:errcheck // the exit is seen through done
	if err := f.waitListening(rieAddr); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}

func (f *Function) waitListening(addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-f.done:
			return errors.New("aws-lambda-rie exited at start")
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("aws-lambda-rie is not listening on %s", addr)
}

// Invoke sends event and returns the function's response payload.
func (f *Function) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.invoke, bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke: emulator answered %d: %s", resp.StatusCode, b)
	}
	return b, nil
}

// Stop ends the emulator and the function, and waits until their output
// has been copied; calling it again does nothing.
func (f *Function) Stop() {
	if f.cmd.Process != nil {
		f.cmd.Process.Kill() //nolint:errcheck // already gone is fine
	}
	<-f.done
}

// lambdaEnv is the environment Lambda (and sam local's container) gives a
// function, not this machine's: a developer's shell can hold settings that
// change what the function does at start-up (AWS_CA_BUNDLE alone makes the
// SDK read and parse a CA bundle, several milliseconds of init).
func lambdaEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"TZ=:UTC",
		"AWS_REGION=us-east-1",
		"AWS_DEFAULT_REGION=us-east-1",
		"AWS_LAMBDA_FUNCTION_NAME=sync-events",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256", // as template.yaml sets
		"AWS_LAMBDA_FUNCTION_TIMEOUT=10",
	}
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
