package ddb

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/internal/awsenv"
)

// ClientOptions say how to reach DynamoDB.
type ClientOptions struct {
	// Endpoint, if set, replaces the AWS endpoint.
	Endpoint string
	// HTTPClient, if set, carries the requests; tests wrap its transport to
	// count calls or inject faults.
	HTTPClient aws.HTTPClient
	// LocalCredentials signs with fixed credentials and a default region
	// when the environment sets none: local backends check neither. (DynamoDB
	// Local keeps one database per access key and region, so every local
	// client must agree on them.)
	LocalCredentials bool
}

// NewClient builds the DynamoDB client once per execution environment,
// from the environment alone (package awsenv).
func NewClient(_ context.Context, opts ClientOptions) (*dynamodb.Client, error) {
	cfg, err := environmentConfig(opts.LocalCredentials)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		if opts.HTTPClient != nil {
			o.HTTPClient = opts.HTTPClient
		}
	}), nil
}

// environmentConfig is awsenv's, with the retryer below.
func environmentConfig(local bool) (aws.Config, error) {
	cfg, err := awsenv.Config(local)
	cfg.Retryer = newRetryer
	return cfg, err
}

// newRetryer keeps the SDK's standard retries (three attempts, jittered
// backoff, throttling and 5xx retried) but drops its client-side retry
// quota: one Lambda environment serves one request at a time, so the quota
// would only turn a brief throttle into a burst of refused retries.
func newRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.RateLimiter = ratelimit.None
	})
}
