// Package devserver serves the API's http.Handler over plain HTTP for
// local development (make run): it stands in for API Gateway's JWT
// authorizer by decoding a bearer token's claims WITHOUT checking its
// signature, and puts the caller in the request's context as the Lambda's
// edge does (edge.WithCaller). It owns the guards that keep such a server
// to the machine it runs on (guard.go) and make run's console log lines.
// It is for loopback use only and never ships in the Lambda binary.
package devserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sync-events/sync-events/internal/edge"
)

// maxRequestBytes mirrors API Gateway's 10 MB payload limit.
const maxRequestBytes = 10 << 20

// invocationTimeout is the deadline given to each request, as Lambda
// gives each invocation one.
const invocationTimeout = 10 * time.Second

// Handler serves next as API Gateway and Lambda would: a body over API
// Gateway's limit refused before next sees it, the bearer token's sub as
// the caller (unverified), a request id and a deadline.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
		if err == nil && len(b) > maxRequestBytes {
			err = fmt.Errorf("request body over %d bytes", maxRequestBytes)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		ctx := edge.WithRequestID(r.Context(), uuid.NewString())
		if sub, ok := BearerClaims(r.Header.Get("Authorization"))["sub"]; ok {
			ctx = edge.WithCaller(ctx, sub)
		}
		ctx, cancel := context.WithTimeout(ctx, invocationTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// BearerClaims decodes the claims of "Bearer <JWT>" the way API Gateway
// hands them to the function: every value a string. The signature is NOT
// checked: this is a local stand-in for the authorizer.
func BearerClaims(auth string) map[string]string {
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return nil
	}
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		return nil
	}
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		switch v := v.(type) {
		case string:
			out[k] = v
		case float64:
			out[k] = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			b, _ := json.Marshal(v)
			out[k] = string(b)
		}
	}
	return out
}

// UnsignedToken is a JWT carrying claims and no real signature: what
// BearerClaims reads, for make run's clients and tests. API Gateway would
// refuse it.
func UnsignedToken(claims map[string]any) string {
	b, err := json.Marshal(claims)
	if err != nil {
		panic(err) // claims are plain values
	}
	return "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(b) + ".unsigned"
}

// BearerSubject is the sub claim of a bearer token, "Bearer <JWT>" or the
// JWT alone (as AppSync's authorization header carries it), read as
// BearerClaims reads it: NOT checked.
func BearerSubject(auth string) (string, bool) {
	if !strings.HasPrefix(auth, "Bearer ") {
		auth = "Bearer " + auth
	}
	sub := BearerClaims(auth)["sub"]
	return sub, sub != ""
}
