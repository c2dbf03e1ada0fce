// Package batch runs the records of a Lambda batch (an SQS queue's
// messages, a Kinesis stream's records, a DynamoDB stream's changes) each
// exactly once through an [idempotency.Flow], and answers Lambda's partial
// batch response: the records that failed, by their item identifier, for
// Lambda to deliver again. It is Powertools' batch processor with its
// idempotency integration, on the flow's one transaction.
//
// [SQS], [Kinesis] and [DynamoDB] each take the event, the flow and a
// [Handler], which plans one record's writes as an [idempotency.Executor]
// does, and return the event's response (set ReportBatchItemFailures on
// the event source mapping) and a [Summary] to log:
//
//	flow := dynamodbstore.NewFlow(client, ledgerTable, idempotency.Options{Cache: idempotency.NewReplayCache(1 << 20)})
//	lambda.Start(func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
//		resp, sum := batch.SQS(ctx, flow, e, importNote, batch.Options[events.SQSMessage]{})
//		slog.InfoContext(ctx, "batch", "summary", sum) // counts only
//		return resp, nil
//	})
//
// Each record is a [idempotency.Request]: its caller (Options.Caller; by
// default DefaultCaller for every record), its key (Options.Key; by
// default the message id, or a stream record's event id), method "BATCH"
// and the source as route ("sqs", "kinesis", "dynamodb"), and its payload
// (Options.Payload; by default the body, data or change, in RFC 8785 form
// where it is JSON). A record whose key is already recorded with the same
// payload is Replayed: done, with no write; its handler runs only where
// the replay cache does not know the key, and its answer is never used.
//
// A record is reported failed where its key or caller cannot be found, its
// handler fails and the key has no record, the store fails (a lost answer
// included: the redelivery is answered from the record if the commit went
// through), its key is recorded for another payload (KeyReused), a
// condition of its writes fails (WriteRejected: nothing was written, and
// a redelivery is likely refused alike, so it ends in the queue's
// dead-letter queue), or concurrent commits kept it out
// (ConflictExhausted). Under [InOrder], the default for a FIFO queue and
// for streams, the first failure ends the batch: it and every later record
// are reported, none of them tried, so that no record commits before one
// sent ahead of it.
//
// Which key: an SQS MessageId is kept when SQS delivers a message again
// (its visibility timeout ran out, or its batch reported it failed), so
// the default key makes each message's writes once however often it is
// delivered. It is new on every send: a producer that retries SendMessage
// after a lost answer sends a second message, which the default runs
// again. Where producers retry, have them put an id of their own in the
// message (a message attribute, a field of the body, or a FIFO queue's
// MessageDeduplicationId, which SQS dedupes only for five minutes) and
// return it from Options.Key. The same holds for a stream: a record's
// event id is kept across Lambda's retries of its batch, and a producer's
// retried PutRecord (or a second write of the same item) is a new record.
//
// The summary holds counts and no payload, key or caller; its Failures
// hold each failed record's identifier and error, for the caller to log
// where that is allowed (under the default key, the identifier is the
// whole key). The examples are in example_test.go, which go doc does not
// print.
package batch
