package poke_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/internal/poke"
)

// recorder is a Publisher that keeps what it was given and fails the
// first failures calls.
type recorder struct {
	failures int
	calls    int
	got      [][]poke.Poke
}

func (r *recorder) Publish(_ context.Context, pokes []poke.Poke) error {
	r.calls++
	if r.calls <= r.failures {
		return errors.New("publish refused")
	}
	r.got = append(r.got, pokes)
	return nil
}

func headRecord(name, user, seq string) events.DynamoDBEventRecord {
	img := map[string]events.DynamoDBAttributeValue{
		"user_id": events.NewStringAttribute(user), "event_id": events.NewStringAttribute("head"), "seq": events.NewNumberAttribute(seq),
	}
	return events.DynamoDBEventRecord{EventName: name, Change: events.DynamoDBStreamRecord{Keys: map[string]events.DynamoDBAttributeValue{
		"user_id": img["user_id"], "event_id": img["event_id"],
	}, NewImage: img}}
}

func eventRecord(user, id string) events.DynamoDBEventRecord {
	img := map[string]events.DynamoDBAttributeValue{
		"user_id": events.NewStringAttribute(user), "event_id": events.NewStringAttribute(id),
		"received_key": events.NewStringAttribute("p0000000000000001"), "payload": events.NewStringAttribute(`{"secret":1}`),
	}
	return events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{NewImage: img}}
}

func TestHandleMakesOnePokePerUserAtTheirHighestHead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []events.DynamoDBEventRecord
		want    []poke.Poke
		report  poke.Report
	}{{
		name: "heads and events mixed, as an unfiltered stream holds them",
		records: []events.DynamoDBEventRecord{
			eventRecord("alice", "9b2f0c3e-1d4a-4e5b-8c6d-7e8f9a0b1c2d"), headRecord("INSERT", "alice", "1"),
			eventRecord("bob", "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"), headRecord("MODIFY", "bob", "7"),
			headRecord("MODIFY", "alice", "3"), eventRecord("alice", "2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a"),
		},
		want:   []poke.Poke{{Channel: "/users/alice", Cursor: "p0000000000000003"}, {Channel: "/users/bob", Cursor: "p0000000000000007"}},
		report: poke.Report{Records: 6, Heads: 3, Published: 2},
	}, {
		name:    "a head's records out of order: the highest wins",
		records: []events.DynamoDBEventRecord{headRecord("MODIFY", "alice", "10"), headRecord("MODIFY", "alice", "9")},
		want:    []poke.Poke{{Channel: "/users/alice", Cursor: "p000000000000000a"}},
		report:  poke.Report{Records: 2, Heads: 2, Published: 1},
	}, {
		name:    "a head removed (a user erased) pokes no one",
		records: []events.DynamoDBEventRecord{headRecord("REMOVE", "alice", "4")},
		report:  poke.Report{Records: 1},
	}, {
		name: "a user id that cannot be a channel segment is counted, not published",
		records: []events.DynamoDBEventRecord{
			headRecord("MODIFY", "auth0|abc", "2"), headRecord("MODIFY", "-dash", "2"), headRecord("MODIFY", "0b6e1f7a-5c2d-4a9e-8f3b-6d1c0a2e4b57", "2"),
		},
		want:   []poke.Poke{{Channel: "/users/0b6e1f7a-5c2d-4a9e-8f3b-6d1c0a2e4b57", Cursor: "p0000000000000002"}},
		report: poke.Report{Records: 3, Heads: 3, Published: 1, NoChannel: 2},
	}, {
		name:    "only events: nothing to publish, no call",
		records: []events.DynamoDBEventRecord{eventRecord("alice", "9b2f0c3e-1d4a-4e5b-8c6d-7e8f9a0b1c2d")},
		report:  poke.Report{Records: 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pub := &recorder{}
			rep, err := poke.Handle(context.Background(), pub, events.DynamoDBEvent{Records: tc.records})
			if err != nil {
				t.Fatal(err)
			}
			if rep != tc.report {
				t.Errorf("report %+v, want %+v", rep, tc.report)
			}
			var got []poke.Poke
			if len(pub.got) > 0 {
				got = pub.got[0]
			}
			if len(pub.got) > 1 || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("published %v, want one call with %v", pub.got, tc.want)
			}
			for _, p := range got {
				if p.Message() != `{"cursor":"`+p.Cursor+`"}` {
					t.Errorf("message %s carries more than the cursor", p.Message())
				}
			}
		})
	}
}

// TestAFailedPublishFailsTheBatchAndItsRetrySendsTheSame: Lambda retries a
// batch whose function failed; the retry publishes what the first try
// would have.
func TestAFailedPublishFailsTheBatchAndItsRetrySendsTheSame(t *testing.T) {
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{headRecord("MODIFY", "alice", "5"), headRecord("MODIFY", "bob", "2")}}
	pub := &recorder{failures: 1}
	if _, err := poke.Handle(context.Background(), pub, batch); !errors.Is(err, poke.ErrPublish) {
		t.Fatalf("first try: %v, want ErrPublish", err)
	}
	rep, err := poke.Handle(context.Background(), pub, batch)
	if err != nil || rep.Published != 2 || len(pub.got) != 1 || len(pub.got[0]) != 2 {
		t.Fatalf("retry: %+v %v, published %v", rep, err, pub.got)
	}
}

func TestChannelIsTheUsersOwnOrNone(t *testing.T) {
	for user, want := range map[string]string{
		"alice": "/users/alice", "0b6e1f7a-5c2d-4a9e-8f3b-6d1c0a2e4b57": "/users/0b6e1f7a-5c2d-4a9e-8f3b-6d1c0a2e4b57",
		"a": "/users/a", "": "", "a/b": "", "a-": "", "-a": "", "auth0|x": "", "é": "",
		"12345678901234567890123456789012345678901234567890":  "/users/12345678901234567890123456789012345678901234567890",
		"123456789012345678901234567890123456789012345678901": "",
	} {
		got, ok := poke.Channel(user)
		if got != want || ok != (want != "") {
			t.Errorf("Channel(%q) = %q %v, want %q", user, got, ok, want)
		}
	}
}

// TestMaySubscribeToOwnChannelOnly runs the cases the template's
// onSubscribe handler is held to as well (clients/typescript's
// onsubscribe test).
func TestMaySubscribeToOwnChannelOnly(t *testing.T) {
	raw, err := os.ReadFile("testdata/subscribe-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Why, Sub, Channel string
		Allowed           bool
	}
	if err := json.Unmarshal(raw, &cases); err != nil || len(cases) < 5 {
		t.Fatalf("cases: %d %v", len(cases), err)
	}
	for _, c := range cases {
		if got := poke.MaySubscribe(c.Sub, c.Channel); got != c.Allowed {
			t.Errorf("%s: MaySubscribe(%q, %q) = %v", c.Why, c.Sub, c.Channel, got)
		}
	}
}

// TestMaySubscribeToASpaceAsAMemberOnly runs the cases the template's
// spaces handler is held to as well.
func TestMaySubscribeToASpaceAsAMemberOnly(t *testing.T) {
	raw, err := os.ReadFile("testdata/space-subscribe-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Members map[string]map[string]string
		Cases   []struct {
			Why, Sub, Channel string
			Allowed           bool
		}
	}
	if err := json.Unmarshal(raw, &f); err != nil || len(f.Cases) < 5 {
		t.Fatalf("cases: %v", err)
	}
	member := func(space, sub string) bool { return f.Members[space][sub] != "" }
	for _, c := range f.Cases {
		if got := poke.MaySubscribeAny(c.Sub, c.Channel, member); got != c.Allowed {
			t.Errorf("%s: MaySubscribeAny(%q, %q) = %v", c.Why, c.Sub, c.Channel, got)
		}
	}
	// A space's stream pokes its channel.
	pub := &recorder{}
	rec := headRecord("MODIFY", "space#5d0c7f2a-8e41-4b6d-9f3a-1c2b7e6d4a90", "3")
	if _, err := poke.Handle(context.Background(), pub, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}); err != nil || len(pub.got) != 1 ||
		pub.got[0][0].Channel != "/spaces/5d0c7f2a-8e41-4b6d-9f3a-1c2b7e6d4a90" {
		t.Errorf("a space's head poked %v (%v)", pub.got, err)
	}
}
