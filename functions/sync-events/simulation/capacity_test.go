package simulation_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/functions/sync-events/apitest"
	"github.com/sync-events/sync-events/internal/ddb/ddbtest"
	"github.com/sync-events/sync-events/internal/eventstore"
)

// On-demand prices, us-east-1, as docs/performance.md cites them: dollars
// per million write and read request units.
const (
	dollarsPerMillionWRU = 0.625
	dollarsPerMillionRRU = 0.125
)

// capacityRow is what one request, or one kind of request, consumed.
type capacityRow struct {
	what string
	// per is how many requests the figures are the mean of, and events how
	// many events each stored or listed.
	per, events int
	// calls, writeUnits and readUnits are means per request.
	calls, writeUnits, readUnits float64
	// unreported is the calls, per request, that consumed capacity DynamoDB
	// does not report: cancelled transactions (an error has no capacity).
	unreported float64
	ops        []string
}

func (r capacityRow) dollarsPerMillion() float64 {
	return r.writeUnits*dollarsPerMillionWRU + r.readUnits*dollarsPerMillionRRU
}

// TestCapacityUnits measures the read and write request units each kind
// of request consumes, as the backend reports them (every call of the
// handler's DynamoDB client asks for ReturnConsumedCapacity TOTAL, see
// ddbtest.MeasureCapacity): a fresh mutation with the head known and with
// the head moved by another environment, a replay in the environment that
// committed it and in another one, a request refused before execution,
// batches of 1, 10 and 98 events, and GET pages of 50 and 1000 small
// events. It logs the table docs/performance.md shows, with what each
// costs per million at the on-demand prices, and holds the figures to
// DynamoDB's rules: a transactional write costs at least 2 units per item,
// a replay from memory nothing, and every answered call reports what it
// consumed.
//
// dynoxide computes consumed capacity from item sizes as DynamoDB does;
// run it there:
//
//	DYNAMODB_ENDPOINT=http://127.0.0.1:8000 DYNAMODB_BACKEND=dynoxide go test -run TestCapacityUnits -v ./functions/sync-events/simulation
//
// kumo reports none, and moto none for TransactWriteItems (and fixed
// figures for reads: 0.5 for any GetItem, 1 for any Query): on those the
// test says so and skips.
func TestCapacityUnits(t *testing.T) {
	// The rate limits on, as deployed, so that the head carries its
	// bucket; high enough that no request here is refused.
	hs := apitest.NewLimited(t, 10_000, 100_000, 10_000, 100_000)
	client, capacity := ddbtest.MeasureCapacity(hs.B.Client)
	// Every environment of this backend, hs's and those NewEnvironment
	// makes, calls DynamoDB through the measuring client.
	hs.B.Client = client
	hs.Rewire()

	measure := func(what string, events int, requests func() int) capacityRow {
		t.Helper()
		capacity.Reset()
		hs.B.Transport.Reset()
		n := requests()
		total, per := capacity.Total(), float64(n)
		row := capacityRow{what: what, per: n, events: events,
			calls: float64(total.Calls) / per, writeUnits: total.WriteUnits / per, readUnits: total.ReadUnits / per}
		for op, c := range capacity.ByOperation() {
			row.ops = append(row.ops, fmt.Sprintf("%s %s", op, units(float64(c.Calls)/per)))
			// Every call DynamoDB answered reports what it consumed.
			if ok := hs.B.Transport.Succeeded(op); c.Reported != ok {
				t.Errorf("%s: %d of %d answered %s calls reported their capacity", what, c.Reported, ok, op)
			}
			row.unreported += float64(c.Calls-c.Reported) / per
		}
		slices.Sort(row.ops)
		return row
	}

	user := "u-" + uuid.NewString()
	apitest.WantResponse(t, hs.Post(user, uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
	if got := capacity.ByOperation()["TransactWriteItems"]; got.Reported == 0 {
		t.Skipf("%s reports no consumed capacity for TransactWriteItems (all it reported: %+v); run this on dynoxide", hs.B.Name, capacity.ByOperation())
	}

	var rows []capacityRow
	const fresh = 10
	key, body := uuid.NewString(), apitest.EventBody(t, uuid.NewString())
	rows = append(rows, measure("fresh mutation, head known", 1, func() int {
		for i := range fresh {
			if i == fresh-1 {
				apitest.WantResponse(t, hs.Post(user, key, body), 201, "")
				break
			}
			apitest.WantResponse(t, hs.Post(user, uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
		}
		return fresh
	}))
	rows = append(rows, measure("replay, the environment that committed it", 0, func() int {
		apitest.WantResponse(t, hs.Post(user, key, body), 201, "")
		return 1
	}))
	rows = append(rows, measure("replay, another environment", 0, func() int {
		apitest.WantResponse(t, hs.NewEnvironment().Post(user, key, body), 201, "")
		return 1
	}))
	rows = append(rows, measure("refused before execution", 0, func() int {
		apitest.WantResponse(t, hs.Post(user, "", apitest.EventBody(t, uuid.NewString())), 400, "VALIDATION_FAILED")
		return 1
	}))
	other := hs.NewEnvironment()
	apitest.WantResponse(t, other.Post(user, uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
	rows = append(rows, measure("fresh mutation, head moved by another environment", 1, func() int {
		// other moved the head last; hs commits behind it.
		apitest.WantResponse(t, hs.Post(user, uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
		return 1
	}))

	reader := "u-" + uuid.NewString()
	apitest.WantResponse(t, hs.Post(reader, uuid.NewString(), apitest.EventBody(t, uuid.NewString())), 201, "")
	for _, n := range []int{1, 10, 98} {
		body := batchBody(t, n)
		rows = append(rows, measure(fmt.Sprintf("batch of %d", n), n, func() int {
			apitest.WantResponse(t, postBatch(hs, reader, uuid.NewString(), body), 201, "")
			return 1
		}))
	}
	// Enough for a page of 1000 and one more: a page reads limit+1 events.
	for listed := 1 + 1 + 10 + 98; listed <= 1000; listed += 98 {
		apitest.WantResponse(t, postBatch(hs, reader, uuid.NewString(), batchBody(t, 98)), 201, "")
	}
	// From a cursor, as a device pulls; a pull from the start reads the
	// stream's floor first, a GetItem more.
	after := hs.Pull(reader, "", 1).Cursor
	for _, limit := range []int{50, 1000} {
		rows = append(rows, measure(fmt.Sprintf("GET page of %d", limit), limit, func() int {
			if p := hs.Pull(reader, after, limit); len(p.Events) != limit || !p.HasMore {
				t.Fatalf("a page of %d events, more: %v; want %d and more", len(p.Events), p.HasMore, limit)
			}
			return 1
		}))
	}

	var table strings.Builder
	fmt.Fprintf(&table, "measured on %s\n\n", hs.B.Name)
	table.WriteString("| request | DynamoDB calls | WRU | RRU | cancelled (not reported) | $ per million requests (DynamoDB) | per event: WRU, $ per million |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		perEvent := ""
		if r.events > 0 && r.readUnits == 0 {
			perEvent = fmt.Sprintf("%s, %.2f", units(r.writeUnits/float64(r.events)), r.dollarsPerMillion()/float64(r.events))
		}
		calls := units(r.calls)
		if len(r.ops) > 0 {
			calls += " (" + strings.Join(r.ops, ", ") + ")"
		}
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %.3f | %s |\n",
			r.what, calls, units(r.writeUnits), units(r.readUnits), units(r.unreported), r.dollarsPerMillion(), perEvent)
	}
	t.Logf("capacity per request, on-demand at $%.3f per million WRU and $%.3f per million RRU:\n%s", dollarsPerMillionWRU, dollarsPerMillionRRU, table.String())

	// DynamoDB's rules, as far as they hold whatever the items' sizes.
	byName := map[string]capacityRow{}
	for _, r := range rows {
		byName[r.what] = r
	}
	// A transactional write costs 2 WRU per KB of each item, rounded up: a
	// fresh mutation writes its ledger record, its event and the head, all
	// under 1 KB, and the event's entry in the local index, which costs a
	// write of its own (1 WRU per KB; 2 at most, were it transactional).
	if r := byName["fresh mutation, head known"]; r.calls != 1 || r.writeUnits < 2*3 || r.writeUnits > 2*4 || r.readUnits != 0 {
		t.Errorf("fresh mutation: %v calls, %s WRU, %s RRU; want 1 call, 6 to 8 WRU (3 items and an index entry), no reads", r.calls, units(r.writeUnits), units(r.readUnits))
	}
	if r := byName["replay, the environment that committed it"]; r.calls != 0 || r.writeUnits != 0 || r.readUnits != 0 {
		t.Errorf("replay from memory: %v calls, %s WRU, %s RRU; want nothing", r.calls, units(r.writeUnits), units(r.readUnits))
	}
	if r := byName["refused before execution"]; r.calls != 0 {
		t.Errorf("a request refused before execution made %v calls", r.calls)
	}
	if r := byName["replay, another environment"]; r.writeUnits != 0 || r.unreported < 1 {
		t.Errorf("replay from DynamoDB: %s WRU reported, %v cancelled; want its one cancelled transaction, which reports nothing", units(r.writeUnits), r.unreported)
	}
	for _, n := range []int{1, 10, 98} {
		// The record, n events, the head.
		if r := byName[fmt.Sprintf("batch of %d", n)]; r.calls != 1 || r.writeUnits < float64(2*(n+2)) {
			t.Errorf("batch of %d: %v calls, %s WRU; want 1 call, at least %d WRU", n, r.calls, units(r.writeUnits), 2*(n+2))
		}
	}
	if single, batch := byName["fresh mutation, head known"], byName["batch of 98"]; batch.writeUnits/98 >= single.writeUnits {
		t.Errorf("an event of a batch of 98 costs %s WRU, a single one %s", units(batch.writeUnits/98), units(single.writeUnits))
	}
	// A strongly consistent Query costs 1 RRU per 4 KB read: the 1001
	// events a page of 1000 reads, of about 200 bytes each, cannot cost
	// less than 1001*200/4096 = 49 units, nor a page of 50 nothing.
	small, large := byName["GET page of 50"], byName["GET page of 1000"]
	if small.readUnits < 1 || large.readUnits < 49 || small.writeUnits != 0 || large.writeUnits != 0 {
		t.Errorf("pages of 50 and 1000: %s and %s RRU, %s and %s WRU", units(small.readUnits), units(large.readUnits), units(small.writeUnits), units(large.writeUnits))
	}
}

// units prints a number of capacity units without needless decimals.
func units(u float64) string {
	if u == math.Trunc(u) {
		return fmt.Sprint(u)
	}
	return fmt.Sprintf("%.1f", u)
}

// batchBody is a batch of n events like apitest.EventBody's, fresh ids.
func batchBody(t testing.TB, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = apitest.EventBody(t, uuid.NewString())
	}
	return `{"events":[` + strings.Join(parts, ",") + `]}`
}

// postBatch sends body to the batch endpoint.
func postBatch(hs *apitest.Harness, user, key, body string) events.APIGatewayV2HTTPResponse {
	hs.T.Helper()
	req := apitest.Request("POST", user, key, body)
	req.RawPath, req.RequestContext.HTTP.Path = api.BatchPath, api.BatchPath
	return hs.Do(req)
}

// TestCapacityUnitsOfABusySpace measures what a busy space's events cost
// on the sequenced path: eight members writing at once from their own
// environments (the writes at the head and the accepts, failed
// transactions included, are the writers' cost), then the sequencer's
// drain of what was accepted, per event placed. It logs both per event,
// holds every answered call to reporting its capacity, and the drain to
// placing every accepted event, and skips where the backend reports no
// transactional capacity (run it on dynoxide, as TestCapacityUnits).
func TestCapacityUnitsOfABusySpace(t *testing.T) {
	hs := apitest.NewAccepting(t)
	client, capacity := ddbtest.MeasureCapacity(hs.B.Client)
	hs.B.Client = client
	hs.Rewire()

	hs.B.Transport.Reset()
	capacity.Reset()
	spaceID, answered := hs.BusySpace(8, 40)
	if got := capacity.ByOperation()["TransactWriteItems"]; got.Reported == 0 {
		t.Skipf("%s reports no consumed capacity for TransactWriteItems; run this on dynoxide", hs.B.Name)
	}
	writers := capacity.Total()
	writersOnSpace := onPartition(capacity.ByTable()[hs.B.Tables.Events])
	writerCalls := hs.B.Transport.Total()

	hs.B.Transport.Reset()
	capacity.Reset()
	tb := eventstore.Table{Client: client, Name: hs.B.Tables.Events}
	placed, err := tb.Drain(context.Background(), eventstore.SpaceStream(spaceID))
	if err != nil {
		t.Fatal(err)
	}
	if int64(placed) != hs.Accepts() {
		t.Errorf("the drain placed %d events; %d were accepted", placed, hs.Accepts())
	}
	seq := capacity.Total()
	seqOnSpace := onPartition(capacity.ByTable()[hs.B.Tables.Events])
	for op, c := range capacity.ByOperation() {
		if ok := hs.B.Transport.Succeeded(op); c.Reported != ok {
			t.Errorf("the sequencer's %s: %d of %d answered calls reported their capacity", op, c.Reported, ok)
		}
	}
	n, p := float64(len(answered)), float64(placed)
	t.Logf("measured on %s: %d writes (%d accepted), 8 writers at once\n"+
		"| per event | DynamoDB calls | WRU | RRU |\n|---|---|---|---|\n"+
		"| the writers' requests | %.2f | %s | %s |\n| the sequencer's drain, per event placed | %.2f | %s | %s |",
		hs.B.Name, len(answered), placed,
		float64(writerCalls)/n, units(writers.WriteUnits/n), units(writers.ReadUnits/n),
		float64(hs.B.Transport.Total())/p, units(seq.WriteUnits/p), units(seq.ReadUnits/p))
	// The same space quiet: one writer at the head, in the environment
	// that knows it.
	hs.B.Transport.Reset()
	capacity.Reset()
	const quiet = 10
	for range quiet {
		if resp := hs.Call("POST", "/api/v1/spaces/"+spaceID+"/events", "m0", uuid.NewString(), apitest.EventBody(t, uuid.NewString())); resp.StatusCode != 201 {
			t.Fatalf("a quiet write: %d %s", resp.StatusCode, resp.Body)
		}
	}
	atHead := onPartition(capacity.ByTable()[hs.B.Tables.Events]) / quiet
	// The events table's share but its global index's is the space's
	// partition's: one item collection (the position index is local to
	// it), which DynamoDB gives at most 1,000 WRU/s.
	if onSpace := writersOnSpace/n + seqOnSpace/p; onSpace > 0 && atHead > 0 {
		t.Logf("on the events table (the space's partition), per event: sequenced %s WRU (the writers' %s, the sequencer's %s), at most %.0f events/s a space at 1,000 WRU/s; at the head %s WRU (%.2f calls), at most %.0f events/s",
			units(onSpace), units(writersOnSpace/n), units(seqOnSpace/p), 1000/onSpace,
			units(atHead), float64(hs.B.Transport.Total())/quiet, 1000/atHead)
	}
}

// onPartition is the write units of c spent on the table's partitions,
// its local indexes included: all but its global indexes'.
func onPartition(c ddbtest.OpCapacity) float64 { return c.WriteUnits - c.GlobalIndexWriteUnits }
