// Command poke is the Lambda function behind live sync: the events
// table's stream, filtered to head items, invokes it with batches of
// records, and it publishes one poke per user whose head moved on that
// user's channel of the AppSync Events API (package poke). A failed
// publish fails the batch, which Lambda retries; the template bounds the
// retries and a record's age, so that a shard never stalls behind a
// poke, and a poke never sent costs a device latency, not an event: its
// next poke, or its periodic pull, brings everything.
//
// LIVE_HTTP_DOMAIN is the Event API's HTTP DNS name; the region and the
// credentials are Lambda's, from the environment (package awsenv). For
// sam local invoke and the runtime emulator, LIVE_PUBLISH_URL replaces the
// Event API with a local one (make run's stand-in), at a local host only,
// and then credentials are optional: it does not check signatures.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sync-events/sync-events/internal/awsenv"
	"github.com/sync-events/sync-events/internal/poke"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	pub, err := publisher()
	if err != nil {
		log.Error("start-up failed", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(handler(pub, log))
}

// publisher is the Event API's publisher the environment describes.
func publisher() (*poke.AppSync, error) {
	// 2 s a publish: a batch of 100 users is 7 rounds of 16, 14 s at
	// worst, under the function's 30 s timeout.
	pub := &poke.AppSync{Client: &http.Client{Timeout: 2 * time.Second}}
	if local := os.Getenv("LIVE_PUBLISH_URL"); local != "" {
		if err := checkLocal(local); err != nil {
			return nil, err
		}
		pub.Endpoint = local
		if cfg, err := awsenv.Config(true); err == nil {
			pub.Region, pub.Credentials = cfg.Region, cfg.Credentials
		}
		return pub, nil
	}
	domain := os.Getenv("LIVE_HTTP_DOMAIN")
	if domain == "" {
		return nil, errors.New("LIVE_HTTP_DOMAIN is not set")
	}
	cfg, err := awsenv.Config(false)
	if err != nil {
		return nil, err
	}
	pub.Endpoint, pub.Region, pub.Credentials = "https://"+domain+"/event", cfg.Region, cfg.Credentials
	return pub, nil
}

// checkLocal refuses a LIVE_PUBLISH_URL that is not local: loopback,
// Docker's host name or a one-label container name, as the template's
// DynamoDBEndpoint, so that no value sends pokes to a host on the
// internet.
func checkLocal(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("LIVE_PUBLISH_URL %q is not an http(s) URL", raw)
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if host == "localhost" || host == "host.docker.internal" || (ip != nil && ip.IsLoopback()) || (ip == nil && host != "" && !strings.Contains(host, ".")) {
		return nil
	}
	return fmt.Errorf("LIVE_PUBLISH_URL %q is not a local host (loopback, host.docker.internal or a container's name)", raw)
}

// handler is the function: one batch in, its pokes out, one log line.
func handler(pub poke.Publisher, log *slog.Logger) func(context.Context, events.DynamoDBEvent) error {
	return func(ctx context.Context, ev events.DynamoDBEvent) error {
		rep, err := poke.Handle(ctx, pub, ev)
		attrs := []any{"records", rep.Records, "heads", rep.Heads, "published", rep.Published, "no_channel", rep.NoChannel}
		if err != nil {
			log.Error("pokes not sent; the batch will be retried", append(attrs, "error", err.Error())...)
			return err
		}
		log.Info("pokes sent", attrs...)
		return nil
	}
}
