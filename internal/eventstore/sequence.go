// Sequencing: giving a space's accepted events their positions. An
// accept (accept in commit.go) stores an event under a pending key, below
// every position, with the writer's role check and a count of their
// pending events on their member item, and touches no head, so writers
// to one busy space do not fail on each other. A pass here reads the
// stream's pending events in the order accepted and, in one transaction
// conditioned on the head, sets each one's position (conditioned on it
// still being pending), takes them off their members' counts and moves
// the head past them. A sequenced event is an ordinary event: reads,
// cursors and retention never see the difference.
//
// HandleAccepted is what the sequencer function (functions/sequencer)
// runs on the table's change feed, filtered to accepts
// (AcceptedRecordFilter); Sweep, what it runs on a schedule for what no
// record brought; Worker runs passes in process when told of an accept,
// for make run and the tests, whose backends may write no change-feed records.

package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/dynamodbstore"
	"github.com/sync-events/sync-events/internal/syncevent"
)

// Limits of one pass: DynamoDB's 100 actions a transaction (the head
// and each member's count take one each) and 4 MB, kept under with room
// for the head and the counts.
const (
	maxPassActions = 100
	maxPassBytes   = 3 << 20
)

// yieldFor is how long the head gives way to passes after each one that
// places events (Head.YieldUntil): as long as an environment
// keeps accepting a space's writes once it found them contended
// (contendedFor), so that a busy space's writers stay on the accept path while
// the sequencer places, instead of taking the head from it between
// accepts.
const yieldFor = time.Second

// Drain sequences stream's pending events, pass after pass, until a
// pass finds none left behind what it placed, and returns how many it
// placed. It ends while writers keep accepting: what they accept after
// its last pass read the front is another drain's, woken by its own
// accept. Any number of Drains may run at once on one stream: every
// write is conditioned, so they cost each other calls, never a position.
func (t Table) Drain(ctx context.Context, stream string) (int, error) {
	placed, _, err := drain(ctx, t, stream, nil)
	return placed, err
}

// passForHead is one pass for a removal waiting for the member's accepted
// events to be placed: it returns the head as the pass left it (ok false:
// not known). A pass that lost the head to other passes is no failure
// here, and it does not try again: they place the same events, and the
// removal reads the member's count to know whether enough were.
func passForHead(ctx context.Context, t Table, stream string) (head Head, ok bool, err error) {
	_, _, last, err := pass(ctx, t, stream, nil, 1)
	return headLeft(last, err)
}

// drainForHead is Drain for a commit at the head that waits on it (a
// removal waiting for the member's accepted events to be placed): it
// returns the head as the drain left it (ok false: not known), so that
// the commit is made at it, not at the head it knew before. A drain that
// lost the head to other passes is no failure here: they place the same
// events, and the commit's own condition tells whether enough were.
func drainForHead(ctx context.Context, t Table, stream string) (head Head, ok bool, err error) {
	_, last, err := drain(ctx, t, stream, nil)
	return headLeft(last, err)
}

// headLeft is the head a pass or a drain for a waiting commit left
// (last, ok false where not known), and its failure: one that lost the
// head to other passes is none.
func headLeft(last *Head, err error) (head Head, ok bool, _ error) {
	if errors.Is(err, idempotency.ErrTransactionConflict) {
		return Head{}, false, nil
	}
	if err != nil || last == nil {
		return Head{}, false, err
	}
	return *last, true, nil
}

// drain is Drain from head, the head as last seen (nil: read it), and
// the head as its last pass left it: each pass after the first starts
// from the head the one before wrote, so that a busy space's passes read
// no head, only their front.
func drain(ctx context.Context, t Table, stream string, head *Head) (placed int, last *Head, err error) {
	for {
		n, more, next, err := pass(ctx, t, stream, head, maxHeadAttempts)
		placed, head = placed+n, next
		if err != nil || !more {
			return placed, head, err
		}
	}
}

// pass sequences the pending events at the front of stream, whole
// requests of them, as many as one transaction holds, and returns how
// many it placed (0: none pending).
//
// The first pass of a burst to find events pending makes the head give
// way to passes (Head.YieldUntil) before it places them, and
// each pass that places events keeps it so: writes that would take the
// head from under the pass are accepted instead, and a pass rarely loses
// the head. A pass that finds nothing pending writes nothing.
//
// It starts from known, the head as last seen (nil: read it), makes at
// most attempts transactions, and reports too whether more events were
// pending behind those it placed when it read them, and the head as it
// left it (nil: not known).
func pass(ctx context.Context, t Table, stream string, known *Head, attempts int) (placed int, more bool, _ *Head, err error) {
	var head Head
	if known != nil {
		head = *known
	} else if head, err = t.ReadHead(ctx, stream); err != nil {
		return 0, false, nil, err
	}
	for attempt := 1; ; attempt++ {
		batch, more, err := front(ctx, t, stream)
		if err != nil || len(batch) == 0 {
			return 0, false, &head, err
		}
		// Something to place: the head gives way first, if it does not
		// already, so that no write takes it from under this pass.
		if !head.YieldUntil.After(time.Now()) {
			if head, err = yieldHead(ctx, t, stream); err != nil {
				return 0, false, nil, err
			}
		}
		next, err := place(ctx, t, stream, head, batch)
		var cancelled *types.TransactionCanceledException
		if !errors.As(err, &cancelled) {
			if err != nil {
				return 0, false, nil, dynamodbstore.Classify(fmt.Errorf("sequence %d events: %w", len(batch), err))
			}
			return len(batch), more, &next, nil
		}
		if attempt == attempts {
			return 0, false, nil, fmt.Errorf("%w: the head of the stream kept moving while sequencing", idempotency.ErrTransactionConflict)
		}
		// The head moved (a commit that cannot be accepted, one under way
		// as the head was told to give way, another pass) or an event was
		// placed by another pass: the head as the failure returned it, or
		// read again, and the front read again.
		if head, err = headAfter(ctx, t, stream, cancelled); err != nil {
			return 0, false, nil, err
		}
	}
}

// pending is an accepted event as a pass needs it.
type pending struct {
	id, key, author string
}

// front reads stream's pending events in the order accepted, whole
// requests of them, within one transaction's limits, and whether more
// were pending behind them.
func front(ctx context.Context, t Table, stream string) (taken []pending, more bool, err error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(t.Name),
		IndexName:                 aws.String(ByReceivedIndex),
		KeyConditionExpression:    aws.String("#u = :u AND begins_with(#rk, :pending)"),
		ExpressionAttributeNames:  map[string]string{"#u": attrStream, "#rk": attrPosition},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": S(stream), ":pending": S(PendingPrefix)},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(maxPassActions),
	}
	var request []pending
	var requestBytes, bytes int
	authors := map[string]bool{}
	requestKey := ""
	// fits reports whether the request read so far may join what is taken.
	fits := func() bool {
		newAuthors := 0 // a request is one writer's: one more count, or none
		if !authors[request[0].author] {
			newAuthors = 1
		}
		return len(taken)+len(request)+len(authors)+newAuthors+1 <= maxPassActions && bytes+requestBytes <= maxPassBytes
	}
	// takeRequest moves the request read so far to what is taken, if it fits.
	takeRequest := func() bool {
		if len(request) == 0 {
			return true
		}
		if !fits() && len(taken) > 0 {
			return false
		}
		taken = append(taken, request...)
		bytes += requestBytes
		authors[request[0].author] = true
		request, requestBytes = nil, 0
		return true
	}
	for {
		page, err := t.Client.Query(ctx, in)
		if err != nil {
			return nil, false, dynamodbstore.Classify(fmt.Errorf("query pending events: %w", err))
		}
		for _, item := range page.Items {
			p, size, err := decodePending(item)
			if err != nil {
				return nil, false, err
			}
			key, _ := pendingRequest(p.key)
			if key != requestKey {
				if !takeRequest() {
					return taken, true, nil
				}
				requestKey = key
			}
			request = append(request, p)
			requestBytes += size
		}
		if len(page.LastEvaluatedKey) == 0 {
			if !takeRequest() {
				return taken, true, nil
			}
			return taken, false, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// decodePending reads a pending event item and about its size.
func decodePending(item map[string]types.AttributeValue) (pending, int, error) {
	var p pending
	size := 0
	for name, into := range map[string]*string{attrID: &p.id, attrPosition: &p.key, attrAuthor: &p.author} {
		v, ok := item[name].(*types.AttributeValueMemberS)
		if !ok {
			return pending{}, 0, fmt.Errorf("%w: a pending event lacks %s", errBadItem, name)
		}
		*into = v.Value
	}
	for name, v := range item {
		size += len(name)
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			size += len(s.Value)
		} else {
			size += 16
		}
	}
	return p, size, nil
}

// place is one transaction: each of batch at the positions after head,
// each conditioned on still being pending; their members' counts taken
// back; the head moved past them, conditioned on being at head. It
// returns the head it wrote.
func place(ctx context.Context, t Table, stream string, head Head, batch []pending) (Head, error) {
	writes := make([]types.TransactWriteItem, 0, len(batch)+2)
	counts := map[string]int{}
	var authors []string
	for i, p := range batch {
		writes = append(writes, types.TransactWriteItem{Update: &types.Update{
			TableName:                aws.String(t.Name),
			Key:                      Key(stream, p.id),
			UpdateExpression:         aws.String("SET #rk = :p REMOVE #ps"),
			ConditionExpression:      aws.String("#rk = :pending"),
			ExpressionAttributeNames: map[string]string{"#rk": attrPosition, "#ps": attrPendingShard},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":p": S(syncevent.At(head.Seq + uint64(i) + 1).SortKey()), ":pending": S(p.key),
			},
		}})
		if counts[p.author] == 0 {
			authors = append(authors, p.author)
		}
		counts[p.author]++
	}
	for _, a := range authors {
		writes = append(writes, placedWrite(t, stream, a, counts[a]))
	}
	next := Head{Seq: head.Seq + uint64(len(batch)), Bucket: head.Bucket, YieldUntil: time.Now().Add(yieldFor)}
	writes = append(writes, t.MoveHead(stream, head.Seq, next, time.Time{}))
	_, err := t.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: writes})
	return next, err
}

// headAfter is the head a cancelled pass found: as the failure returned
// it, or read again where the backend returns no item (or the head was
// not what failed).
func headAfter(ctx context.Context, t Table, stream string, c *types.TransactionCanceledException) (Head, error) {
	reasons := c.CancellationReasons
	if len(reasons) > 0 {
		last := reasons[len(reasons)-1]
		if aws.ToString(last.Code) == "ConditionalCheckFailed" && len(last.Item) > 0 {
			return decodeHead(last.Item)
		}
	}
	return t.ReadHead(ctx, stream)
}

// yieldHead makes stream's head give way to passes for yieldFor, leaving
// its position and bucket as they are, and returns it: writes that may
// be accepted fail at it meanwhile, and are accepted. A stream with no
// head yet is left so.
func yieldHead(ctx context.Context, t Table, stream string) (Head, error) {
	out, err := t.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.Name),
		Key:                       Key(stream, HeadID),
		UpdateExpression:          aws.String("SET #yield = :until"),
		ConditionExpression:       aws.String("attribute_exists(#seq)"),
		ExpressionAttributeNames:  map[string]string{"#yield": AttrHeadYield, "#seq": attrSeq},
		ExpressionAttributeValues: map[string]types.AttributeValue{":until": Millis(time.Now().Add(yieldFor))},
		ReturnValues:              types.ReturnValueAllNew,
	})
	var noHead *types.ConditionalCheckFailedException
	if errors.As(err, &noHead) {
		return Head{}, nil
	}
	if err != nil {
		return Head{}, dynamodbstore.Classify(fmt.Errorf("make the head give way: %w", err))
	}
	return decodeHead(out.Attributes)
}
