package ddb

import (
	"cmp"
	"context"
	"errors"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
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

// NewClient builds the DynamoDB client once per execution environment,
// from the environment alone: the region from AWS_REGION (or
// AWS_DEFAULT_REGION), the credentials from AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, which is where Lambda puts
// the function role's. That is what the SDK's default chain (package
// config) resolves in Lambda too, and leaving the chain out keeps its
// other providers (SSO, STS, instance metadata, shared files) out of the
// binary: about a megabyte of a cold start.
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

// environmentConfig is the AWS configuration the environment gives. With
// local set, a missing region is us-east-1 and missing credentials are
// fixed ones: local backends check neither (and DynamoDB Local keeps one
// database per access key and region, so every local client must agree).
func environmentConfig(local bool) (aws.Config, error) {
	region := cmp.Or(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if local {
		region = cmp.Or(region, "us-east-1")
		if id == "" || secret == "" {
			id, secret = "local", "local"
		}
	}
	switch {
	case region == "":
		return aws.Config{}, errors.New("no AWS region: set AWS_REGION")
	case id == "" || secret == "":
		return aws.Config{}, errors.New("no AWS credentials in the environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (Lambda sets them from the function's role)")
	}
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(id, secret, os.Getenv("AWS_SESSION_TOKEN")),
		Retryer:     newRetryer,
	}, nil
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
