// Package localevents stands in, for make run and tests, for the part of
// an AppSync Events API that live sync uses:
//
//   - the realtime endpoint, GET /event/realtime, a WebSocket speaking the
//     Event API protocol (subprotocol aws-appsync-event-ws, authorization
//     in the header-… subprotocol and in each subscribe; connection_init,
//     connection_ack, ka, subscribe, subscribe_success, subscribe_error,
//     data, unsubscribe, unsubscribe_success, error);
//   - the HTTP publish endpoint, POST /event;
//   - the OIDC auth mode, by a bearer token's claims, NOT checked (as make
//     run's stand-in for the HTTP API's JWT authorizer);
//   - the users namespace's onSubscribe handler: a caller subscribes only
//     to their own channel, /users/<sub>.
//
// It does not check a publisher's IAM signature (it serves loopback only,
// behind make run's host guard), keeps no connection past the process,
// and implements no other namespace, handler or auth mode.
package localevents

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// Subprotocol is the Event API's WebSocket subprotocol.
const Subprotocol = "aws-appsync-event-ws"

// Server is the stand-in. Its zero value is not usable: see New.
type Server struct {
	// subject reads the caller's sub from the Authorization value.
	subject func(authorization string) (string, bool)
	// allowed is the onSubscribe rule: may sub subscribe to channel.
	allowed func(sub, channel string) bool
	// keepAlive is the time between ka messages.
	keepAlive time.Duration
	origin    func(string) bool

	// base is every connection's context; Close cancels it.
	base  context.Context
	close context.CancelFunc

	mu   sync.Mutex
	subs map[string]map[*subscriber]struct{} // channel → its subscriptions
}

// subscriber is one subscription of one connection.
type subscriber struct {
	id   string
	conn *websocket.Conn
}

// Options configure a Server.
type Options struct {
	// Subject reads the caller's sub from the Authorization value of the
	// header subprotocol or of a subscribe.
	Subject func(authorization string) (string, bool)
	// Allowed is the onSubscribe rule.
	Allowed func(sub, channel string) bool
	// KeepAlive is the time between ka messages (default 60 s).
	KeepAlive time.Duration
	// AllowOrigin says whether a page of origin may connect (a browser
	// sends its page's origin; other clients send none, and may).
	AllowOrigin func(origin string) bool
}

// New returns a stand-in.
func New(o Options) *Server {
	ka := o.KeepAlive
	if ka <= 0 {
		ka = time.Minute
	}
	base, cancel := context.WithCancel(context.Background())
	return &Server{subject: o.Subject, allowed: o.Allowed, keepAlive: ka, origin: o.AllowOrigin, base: base, close: cancel, subs: map[string]map[*subscriber]struct{}{}}
}

// Close ends every connection: an http.Server's Shutdown waits for none of
// them, since a WebSocket is a hijacked connection.
func (s *Server) Close() { s.close() }

// Paths the stand-in serves.
const (
	RealtimePath = "/event/realtime"
	PublishPath  = "/event"
)

// ServeHTTP serves RealtimePath and PublishPath.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == RealtimePath && r.Method == http.MethodGet:
		s.serveRealtime(w, r)
	case r.URL.Path == PublishPath && r.Method == http.MethodPost:
		s.servePublish(w, r)
	default:
		http.NotFound(w, r)
	}
}

// connectionTimeout is what connection_ack announces: a client that hears
// nothing for this long reconnects.
const connectionTimeout = 5 * time.Minute

// message is any message of the protocol, in either direction.
type message struct {
	Type                string          `json:"type"`
	ID                  string          `json:"id,omitempty"`
	Channel             string          `json:"channel,omitempty"`
	Authorization       *authorization  `json:"authorization,omitempty"`
	Event               string          `json:"event,omitempty"`
	Errors              []messageError  `json:"errors,omitempty"`
	ConnectionTimeoutMs int64           `json:"connectionTimeoutMs,omitempty"`
	Events              json.RawMessage `json:"events,omitempty"`
}

type authorization struct {
	Host          string `json:"host"`
	Authorization string `json:"Authorization"`
}

type messageError struct {
	ErrorType string `json:"errorType"`
	Message   string `json:"message"`
}

// headerAuthorization reads the header-… subprotocol: base64url JSON of
// the connection's authorization.
func headerAuthorization(r *http.Request) (authorization, bool) {
	for _, field := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(field, ",") {
			enc, ok := strings.CutPrefix(strings.TrimSpace(p), "header-")
			if !ok {
				continue
			}
			raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(enc, "="))
			var a authorization
			if err == nil && json.Unmarshal(raw, &a) == nil {
				return a, true
			}
		}
	}
	return authorization{}, false
}

func (s *Server) serveRealtime(w http.ResponseWriter, r *http.Request) {
	auth, ok := headerAuthorization(r)
	sub, known := "", false
	if ok {
		sub, known = s.subject(auth.Authorization)
	}
	if !known {
		// AppSync refuses the upgrade of an unauthorized connection.
		http.Error(w, `{"errors":[{"errorType":"UnauthorizedException","message":"You are not authorized to make this call."}]}`, http.StatusUnauthorized)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && (s.origin == nil || !s.origin(origin)) {
		http.Error(w, `{"errors":[{"errorType":"UnauthorizedException","message":"This origin may not connect."}]}`, http.StatusForbidden)
		return
	}
	// The origin is checked above, by the API's own CORS policy.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}, InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the client
	}
	if conn.Subprotocol() != Subprotocol {
		conn.Close(websocket.StatusPolicyViolation, "subprotocol "+Subprotocol+" required")
		return
	}
	// The request's context ends with the handler; the connection lives
	// until either side closes it, or Close.
	s.serveConn(s.base, conn, sub)
}

// serveConn runs one connection until either side closes it.
func (s *Server) serveConn(ctx context.Context, conn *websocket.Conn, sub string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mine := map[string]*subscriber{}
	defer func() {
		for _, sb := range mine {
			s.unsubscribe(sb)
		}
		conn.CloseNow()
	}()
	go s.sendKeepAlives(ctx, conn)
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil {
			send(ctx, conn, message{Type: "error", Errors: []messageError{{ErrorType: "BadRequestException", Message: "not a JSON message"}}})
			continue
		}
		s.handle(ctx, conn, sub, m, mine)
	}
}

func (s *Server) handle(ctx context.Context, conn *websocket.Conn, sub string, m message, mine map[string]*subscriber) {
	switch m.Type {
	case "connection_init":
		send(ctx, conn, message{Type: "connection_ack", ConnectionTimeoutMs: connectionTimeout.Milliseconds()})
	case "subscribe":
		s.subscribe(ctx, conn, sub, m, mine)
	case "unsubscribe":
		if sb, ok := mine[m.ID]; ok {
			s.unsubscribe(sb)
			delete(mine, m.ID)
			send(ctx, conn, message{Type: "unsubscribe_success", ID: m.ID})
			return
		}
		send(ctx, conn, message{Type: "unsubscribe_error", ID: m.ID, Errors: []messageError{{ErrorType: "UnknownOperationError", Message: "no such subscription"}}})
	case "publish":
		// The users namespace takes publishes by IAM only: a client's
		// token may not publish.
		send(ctx, conn, message{Type: "publish_error", ID: m.ID, Errors: []messageError{{ErrorType: "UnauthorizedException", Message: "You are not authorized to make this call."}}})
	default:
		send(ctx, conn, message{Type: "error", ID: m.ID, Errors: []messageError{{ErrorType: "UnsupportedOperation", Message: "unknown message type"}}})
	}
}

func (s *Server) subscribe(ctx context.Context, conn *websocket.Conn, sub string, m message, mine map[string]*subscriber) {
	refuse := func(kind, msg string) {
		send(ctx, conn, message{Type: "subscribe_error", ID: m.ID, Errors: []messageError{{ErrorType: kind, Message: msg}}})
	}
	caller, ok := "", false
	if m.Authorization != nil {
		caller, ok = s.subject(m.Authorization.Authorization)
	}
	switch {
	case m.ID == "" || m.Channel == "":
		refuse("BadRequestException", "a subscribe needs an id and a channel")
	case !ok || caller != sub:
		refuse("UnauthorizedException", "You are not authorized to make this call.")
	case !s.allowed(caller, m.Channel):
		refuse("UnauthorizedException", "You are not authorized to make this call.")
	case mine[m.ID] != nil:
		refuse("BadRequestException", "a subscription with this id exists")
	default:
		sb := &subscriber{id: m.ID, conn: conn}
		mine[m.ID] = sb
		s.mu.Lock()
		if s.subs[m.Channel] == nil {
			s.subs[m.Channel] = map[*subscriber]struct{}{}
		}
		s.subs[m.Channel][sb] = struct{}{}
		// Acknowledged before the lock goes, so that a publish that finds
		// the subscription sends its data after the ack, as AppSync does:
		// a device reads subscribe_success before any event of it.
		send(ctx, conn, message{Type: "subscribe_success", ID: m.ID})
		s.mu.Unlock()
	}
}

func (s *Server) unsubscribe(sb *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch, set := range s.subs {
		delete(set, sb)
		if len(set) == 0 {
			delete(s.subs, ch)
		}
	}
}

func (s *Server) sendKeepAlives(ctx context.Context, conn *websocket.Conn) {
	t := time.NewTicker(s.keepAlive)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			send(ctx, conn, message{Type: "ka"})
		}
	}
}

// sendTimeout bounds a write to one connection, so that a stuck client
// cannot hold up a publish.
const sendTimeout = 2 * time.Second

func send(ctx context.Context, conn *websocket.Conn, m message) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	conn.Write(ctx, websocket.MessageText, b) //nolint:errcheck // a failed write ends the connection's read too
}

// publishRequest is the HTTP publish's body.
type publishRequest struct {
	Channel string   `json:"channel"`
	Events  []string `json:"events"`
}

// maxPublishEvents is the most events one publish takes (the Event API's
// limit).
const maxPublishEvents = 5

// servePublish takes a publish. Not from a page: a browser sends a form's
// or a fetch's POST to loopback from any site, with an Origin, and only a
// preflighted request could carry JSON's type; the poke function sends
// neither Origin nor any other type.
func (s *Server) servePublish(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != "" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, `{"errors":[{"errorType":"UnauthorizedException","message":"Publishing is the poke function's."}]}`, http.StatusForbidden)
		return
	}
	var req publishRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err == nil && (req.Channel == "" || len(req.Events) == 0 || len(req.Events) > maxPublishEvents) {
		err = errors.New("a publish needs a channel and 1 to 5 events")
	}
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"errors": []messageError{{ErrorType: "BadRequestException", Message: err.Error()}}}) //nolint:errcheck // the client went away
		return
	}
	type accepted struct {
		Identifier string `json:"identifier"`
		Index      int    `json:"index"`
	}
	ok := make([]accepted, len(req.Events))
	for i, ev := range req.Events {
		s.Publish(r.Context(), req.Channel, ev)
		ok[i] = accepted{Identifier: uuid.NewString(), Index: i}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"successful": ok, "failed": []any{}}) //nolint:errcheck // the client went away
}

// Publish sends event to every subscription of channel and returns how
// many there were.
func (s *Server) Publish(ctx context.Context, channel, event string) int {
	s.mu.Lock()
	subs := make([]*subscriber, 0, len(s.subs[channel]))
	for sb := range s.subs[channel] {
		subs = append(subs, sb)
	}
	s.mu.Unlock()
	for _, sb := range subs {
		send(ctx, sb.conn, message{Type: "data", ID: sb.id, Event: event})
	}
	return len(subs)
}
