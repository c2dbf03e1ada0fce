package edge

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

type (
	callerKey     struct{}
	requestIDKey  struct{}
	base64BodyKey struct{}
)

// WithCaller is ctx carrying the verified caller: the sub claim of a token
// the door checked (API Gateway's JWT authorizer, or make run's stand-in).
// Nothing the client sends past the door can set it.
func WithCaller(ctx context.Context, sub string) context.Context {
	return context.WithValue(ctx, callerKey{}, sub)
}

// Caller is the caller WithCaller put in ctx, "" where the door verified
// none.
func Caller(ctx context.Context) string {
	sub, _ := ctx.Value(callerKey{}).(string)
	return sub
}

// WithRequestID is ctx carrying the request's id, for a door with no
// Lambda invocation behind it (make run) or an event whose invocation
// has none.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the Lambda invocation's id where there is one, else what
// WithRequestID put in ctx: the id the log line and the metrics line of a
// request share.
func RequestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return lc.AwsRequestID
	}
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// TraceID is the X-Ray trace id of the invocation (the Root field of the
// trace header the runtime passes), joining the log line and the metrics
// line to the trace; "" where there is no trace (local runs).
func TraceID(ctx context.Context) string {
	header, _ := ctx.Value("x-amzn-trace-id").(string) // aws-lambda-go's key
	for field := range strings.SplitSeq(header, ";") {
		if root, ok := strings.CutPrefix(field, "Root="); ok {
			return root
		}
	}
	return ""
}

// withBase64Body marks ctx's request as carrying its body as API Gateway
// sent it, base64 text (isBase64Encoded).
func withBase64Body(ctx context.Context) context.Context {
	return context.WithValue(ctx, base64BodyKey{}, true)
}

// Base64Body reports a body still in the base64 text API Gateway sent it
// in. The edge does not decode it: the envelope does, after the checks
// that come first (caller, key, content type), with the body limit held
// to the decoded size and text that is not base64 refused in its own
// words, as for any other malformed body.
func Base64Body(ctx context.Context) bool {
	b, _ := ctx.Value(base64BodyKey{}).(bool)
	return b
}
