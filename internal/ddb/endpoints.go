package ddb

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
)

// cachedEndpoints remembers what the SDK's endpoint rules resolve to. The
// SDK evaluates its rule set on every call, which was a fifth of the
// handler's CPU per request (BenchmarkHandler), and for one client the
// answer only changes with the parameters, which are fixed for ours.
type cachedEndpoints struct {
	inner dynamodb.EndpointResolverV2
	mu    sync.RWMutex
	cache map[endpointKey]smithyendpoints.Endpoint
}

type endpointKey struct {
	region, endpoint, accountID, accountIDMode string
	fips, dualStack                            bool
}

func newCachedEndpoints() *cachedEndpoints {
	return &cachedEndpoints{inner: dynamodb.NewDefaultEndpointResolverV2(), cache: map[endpointKey]smithyendpoints.Endpoint{}}
}

func (c *cachedEndpoints) ResolveEndpoint(ctx context.Context, p dynamodb.EndpointParameters) (smithyendpoints.Endpoint, error) {
	if p.ResourceArn != nil || len(p.ResourceArnList) > 0 {
		return c.inner.ResolveEndpoint(ctx, p) // table ARNs can pick other endpoints
	}
	key := endpointKey{
		region: aws.ToString(p.Region), endpoint: aws.ToString(p.Endpoint),
		accountID: aws.ToString(p.AccountId), accountIDMode: aws.ToString(p.AccountIdEndpointMode),
		fips: aws.ToBool(p.UseFIPS), dualStack: aws.ToBool(p.UseDualStack),
	}
	c.mu.RLock()
	ep, ok := c.cache[key]
	c.mu.RUnlock()
	if ok {
		return ep, nil
	}
	ep, err := c.inner.ResolveEndpoint(ctx, p)
	if err != nil {
		return ep, err
	}
	c.mu.Lock()
	c.cache[key] = ep
	c.mu.Unlock()
	return ep, nil
}
