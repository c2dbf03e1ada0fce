package apitest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// BusySpace makes a space of an owner and members writers, then has
// each writer post from an environment of their own, all at once, until
// the environments have accepted at least accepts writes (Accepts, so
// NewAccepting's harness only) and every writer has posted at least
// once. It returns the space's id and the ids of the events answered
// 201, in no order; it fails the test on any other answer, or if the
// accepts do not come within 30 s.
func (hs *Harness) BusySpace(members int, accepts int64) (spaceID string, answered []string) {
	hs.T.Helper()
	if hs.accepts == nil {
		hs.T.Fatal("BusySpace needs NewAccepting's harness")
	}
	spaceID = uuid.NewString()
	call := func(env *Harness, method, path, user, body string) int {
		key := uuid.NewString()
		for range 20 { // a 503 retried under the same key, as a client does
			if resp := env.Call(method, path, user, key, body); resp.StatusCode != 503 {
				return resp.StatusCode
			}
		}
		return 503
	}
	if st := call(hs, "POST", api.SpacesPath, "owner", `{"id":"`+spaceID+`","name":"busy"}`); st != 201 {
		hs.T.Fatalf("create the space: %d", st)
	}
	for m := range members {
		if st := call(hs, "POST", "/api/v1/spaces/"+spaceID+"/members", "owner", fmt.Sprintf(`{"member":"m%d","role":"writer"}`, m)); st != 201 {
			hs.T.Fatalf("add a member: %d", st)
		}
	}
	path := "/api/v1/spaces/" + spaceID + "/events"
	start := hs.Accepts()
	deadline := time.Now().Add(30 * time.Second)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for m, env := range hs.Environments(members) {
		wg.Go(func() {
			for i := 0; i == 0 || (hs.Accepts()-start < accepts && time.Now().Before(deadline)); i++ {
				id := uuid.NewString()
				st := call(env, "POST", path, fmt.Sprintf("m%d", m), EventBody(hs.T, id))
				if st != 201 {
					hs.T.Errorf("member %d's write: %d", m, st)
					return
				}
				mu.Lock()
				answered = append(answered, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got := hs.Accepts() - start; got < accepts {
		hs.T.Fatalf("%d writes accepted within 30 s, want %d: the space's head was never contended", got, accepts)
	}
	return spaceID, answered
}

// YieldHead makes the head of the space spaceID give way for d, as the
// sequencer does while it places the space's events
// (eventstore.Head.YieldUntil): every write to it that may be accepted
// is, whichever environment takes it.
func (hs *Harness) YieldHead(spaceID string, d time.Duration) {
	hs.T.Helper()
	_, err := hs.B.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(hs.B.Tables.Events),
		Key:                       eventstore.Key(eventstore.SpaceStream(spaceID), eventstore.HeadID),
		UpdateExpression:          aws.String("SET #y = :until"),
		ExpressionAttributeNames:  map[string]string{"#y": eventstore.AttrHeadYield},
		ExpressionAttributeValues: map[string]types.AttributeValue{":until": eventstore.Millis(time.Now().Add(d))},
	})
	if err != nil {
		hs.T.Fatal(err)
	}
}
