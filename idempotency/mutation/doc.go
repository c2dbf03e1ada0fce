// Package mutation runs an HTTP API's mutations exactly once: it takes a
// request from API Gateway (an HTTP API's payload 2.0, which Lambda
// function URLs also send, or a REST API's payload 1.0) or from net/http,
// and puts it through the same envelope whichever door it came in by:
//
//  1. the caller, from the verified request (by default the JWT's sub, as
//     API Gateway's JWT authorizer or a Cognito authorizer verified it);
//  2. the Idempotency-Key (by default from its header: a UUID, bare or in
//     the IETF draft's quoted form);
//  3. Content-Type application/json, the body's size, and the body's RFC
//     8785 canonical form, whose SHA-256 a retry is held to;
//  4. the application's [Mutation], which reads the request and returns
//     its [Plan]: what it answers, and the writes that must commit with
//     that answer;
//  5. the [idempotency.Flow], which commits the writes and the key's
//     record in one transaction, or answers a retry with the stored answer,
//     byte for byte;
//  6. one answer for every outcome: the mutation's own status and body,
//     or a JSON error {"error":CODE,"message":…,"details":…} whose status
//     the code decides.
//
// Requests refused in steps 1 to 4 run nothing and record nothing, so
// the client may fix them and send them again under the same key. The
// envelope's own refusals are fixed, byte for byte: a missing key is 400
// {"error":"VALIDATION_FAILED","message":"Idempotency-Key header is required"},
// and a known key with another body is 409
// {"error":"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD","message":"Idempotency key already used with a different payload"}.
//
// Which methods need a key, how the caller and the key are found, which
// part of the body a retry must repeat, the body limit and the status of
// an application's own error codes are [Options]. The package owns the
// envelope and the answers; it knows nothing of the database, which the
// flow's Store is (package dynamodbstore for DynamoDB), nor of routing,
// which API Gateway, http.ServeMux or the application does.
//
// W is the store's write type. A service on DynamoDB names none: package
// dynamodbstore's NewRunner, Runner, Mutation and Plan are this package's
// with types.TransactWriteItem filled in. The examples (a Lambda handler,
// net/http, a REST API, Options) are in example_test.go, which go doc does
// not print.
package mutation
