// Package awsenv is the AWS configuration a function takes from its
// environment alone: the region from AWS_REGION (or AWS_DEFAULT_REGION),
// the credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN, which is where Lambda puts the function role's. That
// is what the SDK's default chain (package config) resolves in Lambda too,
// and leaving the chain out keeps its other providers (SSO, STS, instance
// metadata, shared files) out of the binary: about a megabyte of a cold
// start. It owns nothing else: each client is its user's.
package awsenv

import (
	"cmp"
	"errors"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Config is the environment's configuration. With local set, a missing
// region is us-east-1 and missing credentials are fixed ones: local
// backends check neither (and DynamoDB Local keeps one database per access
// key and region, so every local client must agree).
func Config(local bool) (aws.Config, error) {
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
	}, nil
}
