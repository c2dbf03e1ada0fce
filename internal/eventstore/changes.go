// The table's change feed (its DynamoDB Streams records): each commit
// moves its stream's head item, and the head's insert or change, one
// record per commit whatever its events, tells that the stream moved and
// to which cursor. Package poke turns that into a device's poke, package
// retention into a trim. This file holds the filter that passes only
// heads' records, and their decoding.

package eventstore

import (
	"context"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/internal/syncevent"
)

// Filter is the event source mapping's filter pattern (Lambda
// event filtering) that passes a change-feed record only when it is a head
// item's insert or change: one record per commit, whatever its events.
// The template holds the same pattern; a test compares them.
const HeadRecordFilter = `{"eventName":["INSERT","MODIFY"],"dynamodb":{"Keys":{"` + attrID + `":{"S":["` + HeadID + `"]}}}}`

// headMoved reads a change-feed record of the events table: when it is a
// head's insert or change, the user whose events moved and the cursor of
// their last committed event; ok is false for any other record (an event
// item, a head's removal, a record without its new image).
func headMoved(r events.DynamoDBEventRecord) (user, cursor string, ok bool) {
	if r.EventName != string(events.DynamoDBOperationTypeInsert) && r.EventName != string(events.DynamoDBOperationTypeModify) {
		return "", "", false
	}
	img := r.Change.NewImage
	id, idOK := stringAttr(img, attrID)
	user, userOK := stringAttr(img, attrStream)
	seqAttr, seqOK := img[attrSeq]
	if !idOK || id != HeadID || !userOK || !seqOK || seqAttr.DataType() != events.DataTypeNumber {
		return "", "", false
	}
	seq, err := strconv.ParseUint(seqAttr.Number(), 10, 64)
	if err != nil {
		return "", "", false
	}
	return user, syncevent.At(seq).Cursor(), true
}

// MovedHeads reads a batch of change-feed records: for each stream whose head
// moved, the cursor of its last committed event, the highest the batch
// holds (sequence cursors of one length order as strings), and how many
// of the records were head changes.
func MovedHeads(records []events.DynamoDBEventRecord) (latest map[string]string, heads int) {
	latest = map[string]string{}
	for _, r := range records {
		stream, cursor, ok := headMoved(r)
		if !ok {
			continue
		}
		heads++
		if cursor > latest[stream] {
			latest[stream] = cursor
		}
	}
	return latest, heads
}

func stringAttr(img map[string]events.DynamoDBAttributeValue, name string) (string, bool) {
	v, ok := img[name]
	if !ok || v.DataType() != events.DataTypeString {
		return "", false
	}
	return v.String(), true
}

// HeadRecord is the change-feed record of user's head as it is now, a MODIFY
// with the head's keys and new image, read with strong consistency; ok is
// false when the user has no head. make run hands it to the poke function
// where its backend writes no change-feed records for transactions (kumo).
func HeadRecord(ctx context.Context, t Table, user string) (events.DynamoDBEventRecord, bool, error) {
	item, err := t.get(ctx, user, HeadID, "head")
	if err != nil || len(item) == 0 {
		return events.DynamoDBEventRecord{}, false, err
	}
	h, err := decodeHead(item)
	if err != nil {
		return events.DynamoDBEventRecord{}, false, err
	}
	keys := map[string]events.DynamoDBAttributeValue{
		attrStream: events.NewStringAttribute(user), attrID: events.NewStringAttribute(HeadID),
	}
	image := map[string]events.DynamoDBAttributeValue{
		attrStream: keys[attrStream], attrID: keys[attrID],
		attrSeq: events.NewNumberAttribute(strconv.FormatUint(h.Seq, 10)),
	}
	return events.DynamoDBEventRecord{
		EventName: string(events.DynamoDBOperationTypeModify), EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{Keys: keys, NewImage: image, StreamViewType: string(types.StreamViewTypeNewImage)},
	}, true, nil
}
