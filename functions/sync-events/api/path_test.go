package api_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/functions/sync-events/api"
)

// RequestPath is the one reading of the path a client addressed: the
// handler routes by it and the contract check holds exchanges to the
// OpenAPI document by it.
func TestRequestPath(t *testing.T) {
	const generated, custom = "abc123.execute-api.eu-west-1.amazonaws.com", "api.example.com"
	for _, tt := range []struct {
		name, routeKey, rawPath, stage, domain, want string
	}{
		{"a static route names the path", "POST /api/v1/sync/events", "/prod/api/v1/sync/events", "prod", generated, "/api/v1/sync/events"},
		{"the catch-all, a named stage on the generated domain", "ANY /{proxy+}", "/prod/api/v1/x", "prod", generated, "/api/v1/x"},
		{"the stage's own root", "ANY /{proxy+}", "/prod", "prod", generated, "/"},
		{"a first segment that only starts like the stage", "ANY /{proxy+}", "/production/x", "prod", generated, "/production/x"},
		{"$default adds no stage", "$default", "/prod/x", "$default", generated, "/prod/x"},
		{"a custom domain adds no stage", "ANY /{proxy+}", "/prod/x", "prod", custom, "/prod/x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := events.APIGatewayV2HTTPRequest{RouteKey: tt.routeKey, RawPath: tt.rawPath}
			req.RequestContext.Stage, req.RequestContext.DomainName = tt.stage, tt.domain
			if got := api.RequestPath(&req); got != tt.want {
				t.Fatalf("RequestPath = %q, want %q", got, tt.want)
			}
		})
	}
}
