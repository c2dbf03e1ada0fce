package simulation_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventtable"
	"github.com/sync-events/sync-events/internal/spaces"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// BenchmarkSequencedSpaceDesign measures the write path docs/design.md
// ("A busy space") proposes for a space, before it is built: each write
// accepted in one transaction that touches no head (its ledger record,
// the writer's role check, the event under a pending key the reads never
// list), and one sequencer giving pending events their positions, many
// to a transaction under the head's condition. It runs on the same items,
// the same index and the same 8 ms held calls as
// BenchmarkOneSpaceMembersAtOnce, and the puller is the API's real GET: a
// sequenced event is read by today's read path unchanged. The sequencer
// is woken at once after each accept, where the deployed one would hear
// of it on the table's stream (the poke path's wait, measured apart).
//
// It is a measurement of the design, not the API's write path: the
// writers here call DynamoDB themselves, not the handler.
func BenchmarkSequencedSpaceDesign(b *testing.B) {
	for _, members := range []int{1, 2, 4, 8, 16, 32} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			hs := apitest.New(b)
			client, capacity := ddbtest.MeasureCapacity(hs.B.Client)
			spaceID := uuid.NewString()
			if resp := spaceCall(b, hs, "POST", api.SpacesPath, "owner", `{"id":"`+spaceID+`","name":"bench"}`); resp.StatusCode != 201 {
				b.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
			}
			for m := range members {
				body := fmt.Sprintf(`{"member":"m%d","role":"writer"}`, m)
				if resp := spaceCall(b, hs, "POST", "/api/v1/spaces/"+spaceID+"/members", "owner", body); resp.StatusCode != 201 {
					b.Fatalf("add: %d %s", resp.StatusCode, resp.Body)
				}
			}
			t := eventtable.Table{Client: client, Name: hs.B.Tables.Events}
			stream := spaces.Stream(spaceID)
			ctx, cancel := context.WithCancel(context.Background())
			seq := &sequencer{t: t, stream: stream, wake: make(chan struct{}, 1)}
			done := make(chan error, 1)
			hs.B.Transport.Reset()
			capacity.Reset()
			hs.B.Transport.Inject(ddbtest.Fault{Kind: ddbtest.Delayed, Delay: 8 * time.Millisecond, Times: 1 << 30})
			go func() { done <- seq.run(ctx) }()
			path := "/api/v1/spaces/" + spaceID + "/events"
			ledger := dynamodbstore.New(client, hs.B.Tables.Ledger)
			var accepted sync.Map
			envs := make([]*apitest.Harness, members) // the writers need no handler
			writers := make([]writer, members)
			var direct atomic.Int64
			writersAtOnce(b, hs, envs, path, "owner", func(m int, _ *apitest.Harness) (events.APIGatewayV2HTTPResponse, string) {
				id := uuid.NewString()
				atHead, err := writers[m].write(ctx, t, ledger, stream, fmt.Sprintf("m%d", m), id)
				if err != nil {
					return events.APIGatewayV2HTTPResponse{StatusCode: 500, Body: err.Error()}, id
				}
				accepted.Store(id, true)
				if atHead {
					direct.Add(1)
				} else {
					select {
					case seq.wake <- struct{}{}:
					default: // a wake is already pending: the stream's batching
					}
				}
				return events.APIGatewayV2HTTPResponse{StatusCode: 201}, id
			})
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				b.Fatal(err)
			}
			all := float64(direct.Load() + seq.events.Load())
			b.ReportMetric(100*float64(direct.Load())/all, "%at-head")
			if n := seq.events.Load(); n > 0 {
				b.ReportMetric(float64(n)/float64(seq.passes.Load()), "events/pass")
			}
			if total := capacity.Total(); total.WriteUnits > 0 {
				b.ReportMetric(total.WriteUnits/all, "WRU/event")
				b.ReportMetric(total.ReadUnits/all, "RRU/event")
			}
			// Every accepted event listed once by the real read, and nothing else but
			// the space's membership events.
			evs, _, last := hs.Observer().Walk(path, "owner", "", 1000)
			listed := map[string]int{}
			for _, ev := range evs {
				if _, ok := accepted.Load(ev.ID); ok {
					listed[ev.ID]++
				} else if !strings.HasPrefix(ev.Type, "space.") {
					b.Errorf("listed %s of type %s, never accepted", ev.ID, ev.Type)
				}
			}
			accepted.Range(func(id, _ any) bool {
				if listed[id.(string)] != 1 {
					b.Errorf("event %s listed %d times (last page %d)", id, listed[id.(string)], last.StatusCode)
				}
				return true
			})
		})
	}
}

// contendedFor is how long a writer that found the head moved accepts
// for the sequencer rather than commit at the head.
const contendedFor = time.Second

// writer is one environment's writer to the space: while it has not
// found the head moved lately, it commits at the head it knows, as today
// (one call, listed at once); for contendedFor after a commit found the
// head moved, it accepts instead (one call, no head, listed once
// sequenced).
type writer struct {
	head           uint64
	known          bool
	contendedUntil time.Time
}

// ledgerCommitter is what accept and write need of the ledger's store.
type ledgerCommitter interface {
	Commit(context.Context, idempotency.Record, []types.TransactWriteItem, time.Time) error
}

func (w *writer) write(ctx context.Context, t eventtable.Table, ledger ledgerCommitter, stream, member, id string) (atHead bool, err error) {
	if time.Now().After(w.contendedUntil) {
		if !w.known {
			item, err := t.Get(ctx, stream, eventtable.HeadID, "head")
			if err != nil {
				return false, err
			}
			h, err := eventtable.DecodeHead(item)
			if err != nil {
				return false, err
			}
			w.head, w.known = h.Seq, true
		}
		err := commitAtHead(ctx, t, ledger, stream, member, id, w.head)
		var failed *dynamodbstore.ConditionFailedError
		if !errors.As(err, &failed) {
			if err == nil {
				w.head++
			}
			return err == nil, err
		}
		if failed.Indexes[0] != 2 {
			return false, err // the role check (or the id), not the head
		}
		w.known, w.contendedUntil = false, time.Now().Add(contendedFor)
		if h, err := eventtable.DecodeHead(failed.Items[0]); err == nil && len(failed.Items[0]) > 0 {
			w.head, w.known = h.Seq, true
		}
	}
	return false, accept(ctx, t, ledger, stream, member, id)
}

// commitAtHead is today's commit: the event at head+1, the head moved
// from head under its condition, the role check, one transaction.
func commitAtHead(ctx context.Context, t eventtable.Table, ledger ledgerCommitter, stream, member, id string, head uint64) error {
	now := time.Now().UTC()
	ev, rec := benchEvent(stream, member, id, now)
	ev.Position = syncevent.At(head + 1)
	put := types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(t.Name), Item: eventtable.EncodeEvent(ev),
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": eventtable.AttrID},
	}}
	return ledger.Commit(ctx, rec, []types.TransactWriteItem{
		spaces.RoleCheck(t, stream, member, spaces.RoleOwner, spaces.RoleWriter), put, headMove(t, stream, head, head+1),
	}, now)
}

// headMove moves stream's head from from to to under its condition,
// returning the head as it stood if it is not at from.
func headMove(t eventtable.Table, stream string, from, to uint64) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(t.Name), Item: eventtable.EncodeHead(stream, eventtable.Head{Seq: to}),
		ConditionExpression:                 aws.String("#seq = :from"),
		ExpressionAttributeNames:            map[string]string{"#seq": eventtable.AttrSeq},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":from": eventtable.N(from)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// benchEvent is the event id member writes to stream, and its ledger record.
func benchEvent(stream, member, id string, now time.Time) (syncevent.Event, idempotency.Record) {
	return syncevent.Event{UserID: stream, ID: id, Author: member, Type: "note.created",
			OccurredAt: "2026-12-02T14:03:00Z", ReceivedAt: now, Payload: []byte(`{"noteId":"n-1842","title":"Groceries"}`)},
		idempotency.Record{UserID: member, Key: uuid.NewString(), PayloadHash: "-", StatusCode: 201, ResponseBody: []byte(`{}`),
			Method: "POST", Route: "/spaces/events", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
}

// pendingPrefix starts the sort key of an event accepted and not yet
// sequenced: below "0", where every read of the stream starts, so no
// read lists it.
const pendingPrefix = "-"

// accept stores the event id of stream as member wrote it, in one
// transaction with its ledger record and member's role check, under a
// pending key: no head is read or moved.
func accept(ctx context.Context, t eventtable.Table, ledger ledgerCommitter, stream, member, id string) error {
	now := time.Now().UTC()
	ev, rec := benchEvent(stream, member, id, now)
	item := eventtable.EncodeEvent(ev)
	item[eventtable.AttrPosition] = eventtable.S(fmt.Sprintf("%s%013d#%s", pendingPrefix, now.UnixMilli(), id))
	put := types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(t.Name), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": eventtable.AttrID},
	}}
	return ledger.Commit(ctx, rec, []types.TransactWriteItem{spaces.RoleCheck(t, stream, member, spaces.RoleOwner, spaces.RoleWriter), put}, now)
}

// sequencer gives one stream's pending events their positions: each pass
// reads up to maxPass of them in the order accepted and, in one
// transaction, moves the head past them and sets each one's position,
// conditioned on the head and on each still pending.
type sequencer struct {
	t      eventtable.Table
	stream string
	wake   chan struct{}
	head   uint64
	known  bool
	passes atomic.Int64
	events atomic.Int64
}

// maxPass is the most events a pass sequences: 99 updates and the head.
const maxPass = 99

func (s *sequencer) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.wake:
		}
		for {
			n, err := s.pass(ctx)
			if err != nil {
				return err
			}
			if n < maxPass {
				break
			}
		}
	}
}

func (s *sequencer) pass(ctx context.Context) (int, error) {
	if !s.known {
		item, err := s.t.Get(ctx, s.stream, eventtable.HeadID, "head")
		if err != nil {
			return 0, err
		}
		h, err := eventtable.DecodeHead(item)
		if err != nil {
			return 0, err
		}
		s.head, s.known = h.Seq, true
	}
	out, err := s.t.Client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.t.Name),
		IndexName:                 aws.String(eventtable.ByReceivedIndex),
		KeyConditionExpression:    aws.String("#u = :u AND begins_with(#rk, :pending)"),
		ExpressionAttributeNames:  map[string]string{"#u": eventtable.AttrStream, "#rk": eventtable.AttrPosition},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": eventtable.S(s.stream), ":pending": eventtable.S(pendingPrefix)},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(maxPass),
	})
	if err != nil || len(out.Items) == 0 {
		return 0, err
	}
	for {
		writes := make([]types.TransactWriteItem, 0, len(out.Items)+1)
		for i, item := range out.Items {
			writes = append(writes, types.TransactWriteItem{Update: &types.Update{
				TableName:                 aws.String(s.t.Name),
				Key:                       eventtable.Key(s.stream, item[eventtable.AttrID].(*types.AttributeValueMemberS).Value),
				UpdateExpression:          aws.String("SET #rk = :p"),
				ConditionExpression:       aws.String("#rk = :pending"),
				ExpressionAttributeNames:  map[string]string{"#rk": eventtable.AttrPosition},
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": eventtable.S(syncevent.At(s.head + uint64(i) + 1).SortKey()), ":pending": item[eventtable.AttrPosition]},
			}})
		}
		writes = append(writes, headMove(s.t, s.stream, s.head, s.head+uint64(len(out.Items))))
		_, err := s.t.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: writes})
		var cancelled *types.TransactionCanceledException
		if err == nil || !errors.As(err, &cancelled) {
			if err != nil {
				return 0, err
			}
			break
		}
		// A writer committed at the head meanwhile: the same pass again
		// at the head the failure returned, or read afresh.
		reasons := cancelled.CancellationReasons
		if len(reasons) != len(writes) || len(reasons[len(writes)-1].Item) == 0 {
			s.known = false
			return maxPass, nil
		}
		h, err := eventtable.DecodeHead(reasons[len(writes)-1].Item)
		if err != nil {
			return 0, err
		}
		s.head = h.Seq
	}
	next := s.head + uint64(len(out.Items))
	s.head = next
	s.passes.Add(1)
	s.events.Add(int64(len(out.Items)))
	return len(out.Items), nil
}

// BenchmarkSequencerCatchUp is the design's sequencer back after being
// down while 1,000 writes were accepted (each 201 answered, none listed):
// the time and calls until all are listed, every call held up to 8 ms.
func BenchmarkSequencerCatchUp(b *testing.B) {
	const backlog = 1000
	for b.Loop() {
		b.StopTimer()
		hs := apitest.New(b)
		spaceID := uuid.NewString()
		if resp := spaceCall(b, hs, "POST", api.SpacesPath, "owner", `{"id":"`+spaceID+`","name":"bench"}`); resp.StatusCode != 201 {
			b.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		t := eventtable.Table{Client: hs.B.Client, Name: hs.B.Tables.Events}
		stream, ledger, ctx := spaces.Stream(spaceID), hs.B.Ledger(), context.Background()
		for range backlog {
			if err := accept(ctx, t, ledger, stream, "owner", uuid.NewString()); err != nil {
				b.Fatal(err)
			}
		}
		hs.B.Transport.Reset()
		hs.B.Transport.Inject(ddbtest.Fault{Kind: ddbtest.Delayed, Delay: 8 * time.Millisecond, Times: 1 << 30})
		seq := &sequencer{t: t, stream: stream}
		b.StartTimer()
		for seq.events.Load() < backlog {
			if _, err := seq.pass(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(hs.B.Transport.Total()), "calls")
		b.ReportMetric(float64(seq.passes.Load()), "passes")
		evs, _, _ := hs.Observer().Walk("/api/v1/spaces/"+spaceID+"/events", "owner", "", 1000)
		listed := 0
		for _, ev := range evs {
			if !strings.HasPrefix(ev.Type, "space.") {
				listed++
			}
		}
		if listed != backlog {
			b.Fatalf("%d of the %d accepted events listed after the catch-up", listed, backlog)
		}
		b.StartTimer()
	}
}
