//go:build !nocontract

package apitest

import (
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sync-events/sync-events/functions/sync-events/api"
	"github.com/sync-events/sync-events/openapi"
)

// ContractChecked reports whether CheckContract holds exchanges to the
// contract in this build (see contract_off.go).
const ContractChecked = true

// CheckContract holds an exchange to openapi.yaml: every request a test
// sends through the handler, and every answer, is checked against it.
func CheckContract(t testing.TB, req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	c, err := openapi.Load()
	if err == nil {
		err = c.Check(api.RequestPath(&req), req, resp)
	}
	if err != nil && !errors.Is(err, openapi.ErrNotHTTP) {
		t.Errorf("contract: %v", err)
	}
}
