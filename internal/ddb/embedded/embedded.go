// Package embedded runs an in-memory, DynamoDB-compatible server in the
// process (minidyn's HTTP server) on a loopback port, for tests and the
// local dev server. It is never imported by the Lambda binary.
package embedded

import (
	"fmt"
	"net"
	"net/http"

	"github.com/truora/minidyn/server"
)

// Server is a running embedded backend.
type Server struct {
	// URL is the endpoint to point a DynamoDB client at.
	URL  string
	http *http.Server
}

// Start listens on an ephemeral loopback port and serves until Close.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("embedded DynamoDB: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), http: &http.Server{Handler: server.NewServer()}}
	go s.http.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.http.Close() }
