// Command sync-events-invoke runs the real bootstrap under the Lambda Runtime
// Interface Emulator, as `sam local invoke` does inside its container, and
// prints the function's answer to each API Gateway event file given, in
// order, against one backend: the embedded in-memory DynamoDB, or
// DYNAMODB_ENDPOINT. With -cold N it instead measures N cold starts: the
// time from starting the emulator to the first answer.
//
//	sync-events-invoke -rie bin/aws-lambda-rie -bootstrap bin/host/bootstrap events/post-fresh.json
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sync-events/sync-events/internal/config"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/local/embedded"
	"github.com/sync-events/sync-events/internal/local/rie"
)

func main() {
	rieBin := flag.String("rie", "bin/aws-lambda-rie", "path to aws-lambda-rie")
	bootstrap := flag.String("bootstrap", "bin/host/bootstrap", "path to the function's bootstrap, built for this machine")
	cold := flag.Int("cold", 0, "measure this many cold starts instead of printing answers")
	manifest := flag.String("manifest", "", "invoke every event a manifest (events/expected.json) lists, in its order")
	flag.Parse()
	files := flag.Args()
	if *manifest != "" {
		var err error
		if files, err = manifestFiles(*manifest); err != nil {
			fmt.Fprintln(os.Stderr, "sync-events-invoke:", err)
			os.Exit(1)
		}
	}
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "usage: sync-events-invoke [-rie path] [-bootstrap path] [-cold N] [-manifest file | event.json...]")
		os.Exit(2)
	}
	if err := run(*rieBin, *bootstrap, *cold, files); err != nil {
		fmt.Fprintln(os.Stderr, "sync-events-invoke:", err)
		os.Exit(1)
	}
}

func run(rieBin, bootstrap string, cold int, files []string) error {
	ctx := context.Background()
	env, stop, err := functionEnv(ctx)
	if err != nil {
		return err
	}
	defer stop()
	opts := rie.Options{RIE: rieBin, Bootstrap: bootstrap, Env: env, Stderr: os.Stderr}
	if cold > 0 {
		return measureColdStarts(ctx, opts, cold, files[0])
	}
	opts.Stdout = os.Stderr // the function's log lines, apart from the answers
	fn, err := rie.Start(opts)
	if err != nil {
		return err
	}
	defer fn.Stop()
	for _, file := range files {
		event, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		out, err := fn.Invoke(ctx, event)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		var pretty bytes.Buffer
		if json.Indent(&pretty, out, "", "  ") != nil {
			pretty.Write(out)
		}
		fmt.Printf("== %s\n%s\n", file, pretty.Bytes())
	}
	return nil
}

// manifestFiles lists the event files of a manifest, in its order, beside it.
func manifestFiles(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []struct {
		Event string `json:"event"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	files := make([]string, len(entries))
	for i, e := range entries {
		files[i] = filepath.Join(filepath.Dir(path), e.Event)
	}
	return files, nil
}

// functionEnv is the function's environment: the backend (started here
// unless DYNAMODB_ENDPOINT is set), with its tables created.
func functionEnv(ctx context.Context) (env []string, stop func(), _ error) {
	names := ddb.TableNames{Ledger: embedded.Getenv(config.EnvIdempotencyTable), Events: embedded.Getenv(config.EnvEventsTable)}
	local, err := embedded.StartLocal(ctx, os.Getenv(config.EnvEndpoint), names)
	if err != nil {
		return nil, nil, err
	}
	return []string{
		config.EnvEndpoint + "=" + local.Endpoint,
		config.EnvIdempotencyTable + "=" + names.Ledger,
		config.EnvEventsTable + "=" + names.Events,
	}, local.Close, nil
}

// measureColdStarts starts a new emulator n times and times each until the
// first answer to event: emulator start, function init and one request.
func measureColdStarts(ctx context.Context, opts rie.Options, n int, file string) error {
	event, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	took := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		fn, err := rie.Start(opts)
		if err != nil {
			return err
		}
		_, err = fn.Invoke(ctx, event)
		took = append(took, time.Since(start))
		fn.Stop()
		if err != nil {
			return err
		}
	}
	slices.Sort(took)
	fmt.Printf("cold starts: %d, median %v, min %v, max %v\n", n, took[n/2].Round(100*time.Microsecond),
		took[0].Round(100*time.Microsecond), took[n-1].Round(100*time.Microsecond))
	return nil
}
