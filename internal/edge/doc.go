// Package edge is where a request enters the API: it owns what travels
// with a request from the door it came in by to the net/http handler
// that serves it, and the one door that is not net/http, API Gateway.
//
//   - Serve converts an API Gateway HTTP API (payload 2.0) event once
//     into an *http.Request, as aws-lambda-go's lambdaurl.Wrap does for
//     a function URL, serves it, and collects the answer into the event's
//     response; RequestPath is the path the client addressed.
//   - The context carries the verified caller (WithCaller, Caller), set
//     once at the door: from the JWT authorizer's claims here, from make
//     run's local token handling in package devserver; and the request's
//     id (WithRequestID, RequestID) and X-Ray trace (TraceID).
//
// It knows nothing of the API's routes, rules or answers.
package edge
