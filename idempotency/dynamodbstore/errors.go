package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sync-events/sync-events/errcode"
)

// ErrItemCollectionFull reports that a write would take an item collection
// (the items of one partition key, in a table with a local secondary
// index) past DynamoDB's 10 GB. Retrying cannot help until items go.
var ErrItemCollectionFull = errors.New("an item collection is at DynamoDB's 10 GB limit")

// throttleCodes are the codes with which DynamoDB refuses a request for
// load: as a call's error code, and as a cancellation reason inside a
// cancelled transaction (which spells them differently).
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true, "ThrottlingException": true, "RequestLimitExceeded": true,
	"ProvisionedThroughputExceeded": true, "ThrottlingError": true,
}

// IsThrottle reports a request DynamoDB refused for load, as a call's
// error or as a reason a transaction was cancelled for.
func IsThrottle(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) && throttleCodes[api.ErrorCode()] {
		return true
	}
	var cancelled *types.TransactionCanceledException
	if errors.As(err, &cancelled) {
		for _, r := range cancelled.CancellationReasons {
			if throttleCodes[aws.ToString(r.Code)] {
				return true
			}
		}
	}
	return false
}

// Classify says what a failed DynamoDB call means for the client: an
// error a later identical request can get past (throttling, a
// DynamoDB-side error, a network failure, a timeout) comes back as an
// *errcode.Error with code errcode.ServiceUnavailable wrapping err; a full
// item collection wraps ErrItemCollectionFull; anything else, a bug or a
// misconfiguration, comes back as it is. An application's own calls can
// go through it too, so that its reads fail as its mutations do.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if _, coded := errcode.Of(err); coded {
		return err
	}
	if isItemCollectionFull(err) {
		return fmt.Errorf("%w: %w", ErrItemCollectionFull, err)
	}
	if isTransient(err) {
		return errcode.Wrap(errcode.ServiceUnavailable, err)
	}
	return err
}

func isItemCollectionFull(err error) bool {
	// Not a modelled error of TransactWriteItems, so it is known by its code.
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ItemCollectionSizeLimitExceededException" {
		return true
	}
	var cancelled *types.TransactionCanceledException
	if errors.As(err, &cancelled) {
		for _, r := range cancelled.CancellationReasons {
			if aws.ToString(r.Code) == "ItemCollectionSizeLimitExceeded" {
				return true
			}
		}
	}
	return false
}

func isTransient(err error) bool {
	if IsThrottle(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var netErr net.Error
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &netErr) || errors.As(err, &sendErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "TransactionInProgressException", "InternalServerError", "ServiceUnavailable",
			"LimitExceededException", "TransactionConflictException":
			return true
		}
		return api.ErrorFault() == smithy.FaultServer
	}
	return false
}
