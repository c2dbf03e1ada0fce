package dynamodbstore

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sync-events/sync-events/idempotency"
	"github.com/sync-events/sync-events/idempotency/mutation"
)

// The exactly-once types of a service on DynamoDB, with the write type
// filled in: a service names these, and no type parameter.
type (
	// Write is a business write: a Put, Update, Delete or ConditionCheck
	// on any table, committed with the key's record.
	Write = types.TransactWriteItem
	// Plan is what a mutation does: its answer, its Writes, and the words
	// of its refusal (see mutation.Plan).
	Plan = mutation.Plan[Write]
	// Mutation reads an accepted request into its Plan (see
	// mutation.Mutation).
	Mutation = mutation.Mutation[Write]
	// Runner is the envelope the mutations run in (see mutation.Runner).
	Runner = mutation.Runner[Write]
	// Flow is the exactly-once flow without HTTP, for a queue's consumer
	// (see idempotency.Flow).
	Flow = idempotency.Flow[Write]
	// Executor computes a mutation's answer and writes for Flow.Do, given
	// the commit's time (see idempotency.Executor).
	Executor = idempotency.Executor[Write]
	// Execution is what an Executor returns: the answer to record and the
	// writes to commit with it (see idempotency.Execution).
	Execution = idempotency.Execution[Write]
)

// NewRunner is the envelope of mutations on DynamoDB, over the ledger
// table called table: the Store, the Flow over it with flow's options
// (retention, replay cache), and the Runner with envelope's. Build one per
// execution environment and share it.
func NewRunner(client *dynamodb.Client, table string, flow idempotency.Options, envelope mutation.Options) *Runner {
	return mutation.New(NewFlow(client, table, flow), envelope)
}

// NewFlow is the exactly-once flow over the ledger table called table.
func NewFlow(client *dynamodb.Client, table string, opts idempotency.Options) *Flow {
	return idempotency.NewFlow[Write](New(client, table), opts)
}
