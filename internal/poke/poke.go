// Package poke tells devices that a stream's events moved. From a batch of
// the events table's change-feed records it makes one poke per stream whose
// head moved, "the head is now at cursor C", and publishes it on that
// stream's channel of an AppSync Events API: a user's own, /users/<sub>,
// or a space's, /spaces/<id>. A poke carries no event
// data: a device that gets one pulls, and the pull, with its
// authorization, stays the only way to read events.
//
// It owns the channel names and the poke's shape. It does not read the
// change feed (Lambda's event source mapping does, or a local stand-in)
// nor decide what a head is (package eventstore does).
package poke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/eventstore"
)

// The channel namespaces: user u's channel is /users/u, space s's is
// /spaces/s.
const (
	Namespace      = "users"
	SpaceNamespace = "spaces"
)

// segmentPattern is what AppSync Events allows in a channel segment.
var segmentPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,48}[A-Za-z0-9])?$`)

// Channel is user's channel, and false when the user id cannot be a
// channel segment (AppSync Events allows letters, digits and dashes, 50 at
// most, neither first nor last a dash): such a user's devices poll. A Cognito or most OIDC subjects (UUIDs,
// digits) fit.
func Channel(user string) (string, bool) {
	if !segmentPattern.MatchString(user) {
		return "", false
	}
	return "/" + Namespace + "/" + user, true
}

// MaySubscribe is the users namespace's onSubscribe rule: a caller whose
// token's sub is sub may subscribe to channel only when it is their own.
// The template's handler (APPSYNC_JS) is this rule, and make run's Event
// API stand-in applies this function; testdata/subscribe-cases.json holds
// both to the same cases.
func MaySubscribe(sub, channel string) bool {
	own, ok := Channel(sub)
	return ok && channel == own
}

// SpaceChannel is space id's channel.
func SpaceChannel(id string) (string, bool) {
	if !segmentPattern.MatchString(id) {
		return "", false
	}
	return "/" + SpaceNamespace + "/" + id, true
}

// MaySubscribeAny is both namespaces' onSubscribe rule: a user's own
// channel (MaySubscribe), and a space's channel for its members, which
// member tells (the template's spaces handler reads the member's item;
// testdata/space-subscribe-cases.json holds both to the same cases).
func MaySubscribeAny(sub, channel string, member func(space, sub string) bool) bool {
	if id, ok := strings.CutPrefix(channel, "/"+SpaceNamespace+"/"); ok {
		own, valid := SpaceChannel(id)
		return valid && own == channel && sub != "" && member(id, sub)
	}
	return MaySubscribe(sub, channel)
}

// Poke is one message: on Channel, the user's head is now at Cursor.
type Poke struct {
	Channel string
	Cursor  string
}

// Message is the poke's event as published: a JSON object holding the
// cursor, nothing else.
func (p Poke) Message() string {
	b, err := json.Marshal(struct {
		Cursor string `json:"cursor"`
	}{p.Cursor})
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

// Publisher sends pokes. An error means some may not have been sent; the
// batch is then delivered again, and pokes sent twice do no harm (a device
// pulls from its own cursor).
type Publisher interface {
	Publish(ctx context.Context, pokes []Poke) error
}

// Report counts what a batch came to, for the log.
type Report struct {
	Records   int // stream records in the batch
	Heads     int // of which head changes
	Published int // pokes sent: one per user with a channel
	NoChannel int // users whose id cannot be a channel
}

// Handle turns one batch of change-feed records into pokes and publishes them:
// records of anything but a head are skipped (the filter should have
// dropped them), and a user's several heads in one batch make one poke at
// the highest. It returns an error when the publisher does, so that Lambda
// retries the batch; it never fails on a record it does not understand,
// which would stop the shard.
func Handle(ctx context.Context, pub Publisher, ev events.DynamoDBEvent) (Report, error) {
	rep := Report{Records: len(ev.Records)}
	latest, heads := eventstore.MovedHeads(ev.Records)
	rep.Heads = heads
	pokes := make([]Poke, 0, len(latest))
	for stream, cursor := range latest {
		ch, ok := Channel(stream)
		if id, space := eventstore.SpaceID(stream); space {
			ch, ok = SpaceChannel(id)
		}
		if !ok {
			rep.NoChannel++
			continue
		}
		pokes = append(pokes, Poke{Channel: ch, Cursor: cursor})
	}
	sort.Slice(pokes, func(i, j int) bool { return pokes[i].Channel < pokes[j].Channel })
	if len(pokes) == 0 {
		return rep, nil
	}
	if err := pub.Publish(ctx, pokes); err != nil {
		return rep, fmt.Errorf("%w: %w", ErrPublish, err)
	}
	rep.Published = len(pokes)
	return rep, nil
}

// ErrPublish reports pokes not sent; the batch is to be retried.
var ErrPublish = errors.New("poke: publishing failed")
