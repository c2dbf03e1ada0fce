package dynamodbstore

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sync-events/sync-events/idempotency"
)

// outcomeProbe watches the attempts the SDK makes of one call, and
// records whether any of them may have been applied without an answer
// saying so: sent (not refused at the dial) and answered with no 4xx, the
// status with which DynamoDB refuses a request it did not carry out.
type outcomeProbe struct{ unknown bool }

// option adds the probe to one call, as the first middleware of the
// deserialize step: the retry loop runs above it, so it sees each attempt.
func (p *outcomeProbe) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("outcomeProbe", p.attempt), middleware.Before)
	})
}

func (p *outcomeProbe) attempt(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil && !refusedAnswer(out.RawResponse) && !notSent(err) {
		p.unknown = true
	}
	return out, md, err
}

// refusedAnswer reports an answer of DynamoDB's that it did not carry out
// the request: a 4xx (a 200 whose body was lost may have been applied).
func refusedAnswer(raw any) bool {
	resp, ok := raw.(*smithyhttp.Response)
	return ok && resp != nil && resp.Response != nil &&
		resp.StatusCode >= http.StatusBadRequest && resp.StatusCode < http.StatusInternalServerError
}

// notSent reports an attempt that failed before its request could leave:
// the connection was never made.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// wasCancelled reports a transaction DynamoDB answered as cancelled, in the
// errors Commit returns: then nothing of it was applied, whatever earlier
// attempts did (had one been applied, the key's record would have
// cancelled this one as a known key).
func wasCancelled(err error) bool {
	var cancelled *types.TransactionCanceledException
	var failed *ConditionFailedError
	var exists *idempotency.KeyExistsError
	return errors.As(err, &cancelled) || errors.As(err, &failed) || errors.As(err, &exists)
}
