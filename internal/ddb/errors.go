package ddb

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrThrottled reports a request DynamoDB refused for load.
var ErrThrottled = errors.New("dynamodb throttled the request")

// ErrItemCollectionFull reports that a write would take one user's item
// collection past DynamoDB's 10 GB (a table with a local secondary index
// keeps every item of a partition key, with its index entries, in one
// collection). Retrying cannot help until items are removed.
var ErrItemCollectionFull = errors.New("the user's item collection is at DynamoDB's 10 GB limit")

// throttleCodes are the codes with which DynamoDB refuses a request for
// load: as a call's error code, and as a cancellation reason inside a
// cancelled transaction (which spells them differently).
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true, "ThrottlingException": true, "RequestLimitExceeded": true,
	"ProvisionedThroughputExceeded": true, "ThrottlingError": true,
}

// IsTransient reports whether err is a failure that a later identical
// request can get past: throttling, a DynamoDB-side error, a network failure
// or a timeout. Anything else is a bug or a misconfiguration.
func IsTransient(err error) bool {
	if errors.Is(err, ErrThrottled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		if throttleCodes[api.ErrorCode()] {
			return true
		}
		switch api.ErrorCode() {
		case "TransactionInProgressException", "InternalServerError", "ServiceUnavailable",
			"LimitExceededException", "TransactionConflictException":
			return true
		}
		return api.ErrorFault() == smithy.FaultServer
	}
	return false
}
