package outbox

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// Stream is the handler of a Lambda fed by the ledger table's stream (its
// event source mapping filtered to records inserted with effects, with
// ReportBatchItemFailures): each record's effects delivered, in order. A
// record whose delivery failed on the ledger, and every record after it,
// is reported as a batch item failure, so that the mapping retries them
// in order and, past its retries, sends them to its on-failure
// destination.
func (o *Outbox) Stream(ctx context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	for i, r := range e.Records {
		user, key := r.Change.Keys["user_id"], r.Change.Keys["key"]
		if user.DataType() != events.DataTypeString || key.DataType() != events.DataTypeString {
			continue // not a ledger record
		}
		if err := o.Deliver(ctx, user.String(), key.String()); err != nil {
			for _, rest := range e.Records[i:] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rest.Change.SequenceNumber})
			}
			return resp, nil
		}
	}
	return resp, nil
}
