// Package embedded runs an in-memory, DynamoDB-compatible server in the
// process (kumo's DynamoDB emulator) on a loopback port, for tests and the
// local dev server. It is never imported by the Lambda binary: a test of
// the function's dependency list holds that.
package embedded

import (
	"github.com/sivchari/kumo"
)

// Server is a running embedded backend.
type Server struct {
	// URL is the endpoint to point a DynamoDB client at.
	URL string
	srv *kumo.Server
}

// Name names the embedded implementation in logs and test output.
const Name = "kumo"

// Start listens on an ephemeral loopback port and serves until Close.
func Start() (*Server, error) {
	srv := kumo.NewServer()
	return &Server{URL: srv.URL, srv: srv}, nil
}

// Close stops the server.
func (s *Server) Close() error {
	s.srv.Close()
	return nil
}
