package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sync-events/sync-events/internal/cors"
	"github.com/sync-events/sync-events/internal/ddb"
	"github.com/sync-events/sync-events/internal/eventstore"
	"github.com/sync-events/sync-events/internal/local/devserver"
	"github.com/sync-events/sync-events/internal/local/localevents"
	"github.com/sync-events/sync-events/internal/local/streamfeed"
	"github.com/sync-events/sync-events/internal/poke"
	"github.com/sync-events/sync-events/internal/retention"
)

// live is make run's live sync, built as in AWS from the events table's
// stream up: records are fed to the real poke function (package poke) as
// the event source mapping would (package streamfeed, with the
// template's filter, batch size and retries), and it publishes over HTTP,
// with the real publisher, to a stand-in for the AppSync Events API
// (package localevents) that this server mounts at /event.
type live struct {
	events *localevents.Server
	// commits, when set, is told of each user whose mutation was answered
	// 2xx: the stand-in for a stream the backend does not write.
	commits *streamfeed.Synthesized
	source  string
}

// Settings the template gives the event source mapping.
const (
	streamBatchSize  = 100
	streamMaxRetries = 3
)

// envLiveSource chooses where records come from: "stream" (the table's
// DynamoDB stream, read through the Streams API) or "answers" (the head
// read after each 2xx mutation). By default: answers on the embedded
// backend, whose stream has no records of transactions; the stream on an
// endpoint whose table has one.
const envLiveSource = "LIVE_SOURCE"

// envRetention is how long make run keeps events, as a Go duration
// ("30s", "720h"); unset or 0, every event stays. The template's
// EventRetentionDays counts whole days: this lets retention be tried in
// seconds.
const envRetention = "EVENT_RETENTION"

func localRetention() (time.Duration, error) {
	v := os.Getenv(envRetention)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q is not a duration such as 30s or 720h", envRetention, v)
	}
	return d, nil
}

func startLive(ctx context.Context, log *slog.Logger, addr, endpoint string, embedded bool, table string, origins cors.Origins) (*live, error) {
	client, err := ddb.NewClient(ctx, ddb.ClientOptions{Endpoint: endpoint, LocalCredentials: true})
	if err != nil {
		return nil, err
	}
	l := &live{events: localevents.New(localevents.Options{
		Subject: devserver.BearerSubject,
		// One's own channel, and a space's for its members, as the
		// template's handlers decide (the spaces' reads the member item).
		Allowed: func(sub, channel string) bool {
			return poke.MaySubscribeAny(sub, channel, func(space, sub string) bool {
				_, member, err := eventstore.Table{Client: client, Name: table}.Role(ctx, eventstore.SpaceStream(space), sub)
				return err == nil && member
			})
		},
		AllowOrigin: origins.Allows,
	})}
	pub := &poke.AppSync{
		Endpoint: "http://" + addr + localevents.PublishPath, Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		Client:      &http.Client{Timeout: 5 * time.Second},
	}
	keep, err := localRetention()
	if err != nil {
		return nil, err
	}
	trimmer := eventstore.Table{Client: client, Name: table}
	if keep > 0 {
		log.Info("retention: events older than this go, stream by stream, when the stream is next written to", "keep", keep.String())
	}
	mapping := &streamfeed.Mapping{
		Function: func(ctx context.Context, ev events.DynamoDBEvent) error {
			if _, err := poke.Handle(ctx, pub, ev); err != nil {
				return err
			}
			if keep == 0 {
				return nil
			}
			// In AWS the retention function has a mapping of its own
			// (batched for minutes); here the same records trim at once.
			_, err := retention.Handle(ctx, trimmer, retention.Policy{Keep: keep, Limit: 1000}, ev, time.Now())
			return err
		},
		Filter: eventstore.HeadRecordFilter, BatchSize: streamBatchSize,
		MaxRetries: streamMaxRetries, RetryBase: 200 * time.Millisecond, Log: log,
	}
	source := os.Getenv(envLiveSource)
	streamARN := ""
	if source != "answers" && (source == "stream" || !embedded) {
		if streamARN, err = streamfeed.StreamARN(ctx, client, table); err != nil {
			return nil, err
		}
	}
	switch {
	case source == "stream" && streamARN == "":
		return nil, fmt.Errorf("%s=stream, but the table %s has no stream", envLiveSource, table)
	case streamARN != "":
		l.source = "stream"
		// Serve once the stream is read from here on: a commit answered
		// after start-up is never missed.
		ready := make(chan struct{})
		go streamfeed.Poll(ctx, streamfeed.LocalClient(endpoint), streamARN, mapping, 250*time.Millisecond, func() { close(ready) })
		select {
		case <-ready:
		case <-time.After(10 * time.Second):
			log.Warn("the events table's stream is not read yet; pokes of the first commits may be missed")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	default:
		l.source = "answers"
		l.commits = &streamfeed.Synthesized{Read: func(ctx context.Context, user string) (events.DynamoDBEventRecord, bool, error) {
			return eventstore.HeadRecord(ctx, eventstore.Table{Client: client, Name: table}, user)
		}}
		go l.commits.Run(ctx, mapping)
	}
	return l, nil
}

// noteCommits tells l.commits, if set, of the stream of each 2xx
// mutation: the space its path names (or its body creates), or the
// caller's own.
func (l *live) noteCommits(next http.Handler) http.Handler {
	if l.commits == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if r.Method == http.MethodGet || r.Method == http.MethodOptions || rec.status/100 != 2 {
			return
		}
		if stream, ok := committedStream(r, body); ok {
			l.commits.Note(stream)
		}
	})
}

// committedStream is the stream a 2xx mutation committed to.
func committedStream(r *http.Request, body []byte) (string, bool) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // api v1 spaces {id} …
	if len(segs) >= 3 && segs[0] == "api" && segs[1] == "v1" && segs[2] == "spaces" {
		if len(segs) >= 4 {
			return eventstore.SpaceStream(segs[3]), true
		}
		var created struct{ ID string }
		if json.Unmarshal(body, &created) == nil && created.ID != "" {
			return eventstore.SpaceStream(created.ID), true
		}
		return "", false
	}
	return devserver.BearerSubject(r.Header.Get("Authorization"))
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
