package devserver

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// The dev server decodes a token's claims without checking its signature:
// whoever reaches it can act as any user. These guards keep it to the
// machine it runs on and to data that is not real:
//
//   - CheckListenAddr: it listens on loopback unless told otherwise;
//   - HostGuard: it answers only requests addressed to a loopback name or
//     address or to its listen address, so that a page whose name is
//     rebound to 127.0.0.1 (DNS rebinding) gets nothing from it;
//   - CheckEndpoint and DropAWSCredentials: it never talks to DynamoDB in
//     AWS, and never signs a request with real credentials.

// EnvAllowNonLoopback, set to 1, lets the dev server listen on an address
// that is not loopback.
const EnvAllowNonLoopback = "ALLOW_NON_LOOPBACK"

// AllowNonLoopback reads EnvAllowNonLoopback's value: "" is no, "1" is yes,
// and anything else is an error rather than a guess.
func AllowNonLoopback(v string) (bool, error) {
	switch v {
	case "":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("%s must be 1 or unset", EnvAllowNonLoopback)
}

// CheckListenAddr refuses a listen address (host:port) whose host is not
// loopback (localhost or a loopback IP), unless allow is set. An empty host
// listens on every interface, so it is not loopback either.
func CheckListenAddr(addr string, allow bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("ADDR %q is not host:port: %w", addr, err)
	}
	if allow || isLoopbackName(host) {
		return nil
	}
	return fmt.Errorf("ADDR %q is not a loopback address: the dev server accepts tokens without checking their signatures, "+
		"so anyone who reaches it can act as any user; set %s=1 to listen there anyway", addr, EnvAllowNonLoopback)
}

// isLoopbackName reports localhost, a name under .localhost (which
// browsers resolve to loopback themselves, RFC 6761) or a loopback IP.
func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HostNotAllowed is the code of the dev server's answer to a request
// addressed to another host. It is the dev server's own, not one of the
// API's codes: API Gateway checks the host before anything else runs.
const HostNotAllowed = "HOST_NOT_ALLOWED"

// hostRefused is the 421 body; it names no part of the request.
const hostRefused = `{"error":"` + HostNotAllowed + `","message":"This server answers only requests addressed to localhost, a loopback address or the address it listens on"}`

// HostGuard answers 421 Misdirected Request, with a JSON error, to a
// request whose Host is not one this server may be reached by: localhost
// (or a name under .localhost), a loopback IP, the host of listenAddr,
// or, when listenAddr listens on every interface, any IP address. A DNS
// name other than those is refused: it is what a page using DNS rebinding
// sends. The port is not compared (a proxy in front may have another).
func HostGuard(listenAddr string, next http.Handler) http.Handler {
	listenHost, _, _ := net.SplitHostPort(listenAddr)
	listenHost = strings.ToLower(strings.Trim(listenHost, "[]"))
	anyIP := listenHost == ""
	if ip := net.ParseIP(listenHost); ip != nil && ip.IsUnspecified() {
		anyIP = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
		ip := net.ParseIP(host)
		if host != "" && (isLoopbackName(host) || host == listenHost || (anyIP && ip != nil)) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMisdirectedRequest)
		w.Write([]byte(hostRefused)) //nolint:errcheck // the client went away
	})
}

// awsDomains are the DNS suffixes of AWS's service endpoints: the
// commercial partition (amazonaws.com, and api.aws for dual-stack), China
// (amazonaws.com.cn), the European Sovereign Cloud (amazonaws.eu), the
// isolated regions, and on.aws.
var awsDomains = []string{"amazonaws.com", "amazonaws.com.cn", "api.aws", "amazonaws.eu", "c2s.ic.gov", "sc2s.sgov.gov", "on.aws"}

// CheckEndpoint refuses a DynamoDB endpoint in AWS, whatever its scheme:
// the dev server stands in for the JWT authorizer without checking a
// signature, so on real tables a made-up token would read and write any
// user's data. Empty (the embedded backend) and every other host pass.
func CheckEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return errors.New("DYNAMODB_ENDPOINT is not a URL")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, d := range awsDomains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return fmt.Errorf("DYNAMODB_ENDPOINT %q is in AWS: the dev server accepts tokens without checking their signatures, "+
				"so it runs only on the embedded backend or a local one (DynamoDB Local, moto, dynoxide)", endpoint)
		}
	}
	return nil
}

// awsCredentialVariables are where the SDK client finds credentials (see
// ddb.NewClient: it reads the environment only).
var awsCredentialVariables = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}

// DropAWSCredentials removes AWS credentials from the process's
// environment, so that every DynamoDB request the dev server sends is
// signed with fixed local credentials, which AWS refuses: even an endpoint
// that CheckEndpoint lets through (a name or address that leads to AWS)
// gets no request signed by a real key. It reports whether any was set.
func DropAWSCredentials() (bool, error) {
	dropped := false
	for _, name := range awsCredentialVariables {
		if _, ok := os.LookupEnv(name); ok {
			dropped = true
			if err := os.Unsetenv(name); err != nil {
				return dropped, err
			}
		}
	}
	return dropped, nil
}
