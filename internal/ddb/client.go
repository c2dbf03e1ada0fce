package ddb

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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

// NewClient builds the DynamoDB client once per execution environment, from
// the SDK's default configuration chain.
func NewClient(ctx context.Context, opts ClientOptions) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRetryer(newRetryer))
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if opts.LocalCredentials {
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
		// Only the environment is consulted: probing the rest of the chain
		// (instance metadata) stalls for seconds off AWS.
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
		}
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: set AWS_REGION")
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		// Set here, not in LoadDefaultConfig, which refuses a plain
		// *http.Client when AWS_CA_BUNDLE is set.
		if opts.HTTPClient != nil {
			o.HTTPClient = opts.HTTPClient
		}
	}), nil
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
