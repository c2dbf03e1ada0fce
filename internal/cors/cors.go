// Package cors owns the API's cross-origin policy: the methods, request
// headers, exposed headers and preflight lifetime that template.yaml gives
// API Gateway's CORS configuration (a test holds the two together), and an
// http.Handler wrapper that answers with them as API Gateway does, for the
// dev server. Which origins are allowed is deployment configuration: the
// template's CorsAllowOrigins parameter in AWS, an Origins value here. It
// does not route, authorize or log.
package cors

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Policy is a CORS configuration in API Gateway's terms.
type Policy struct {
	AllowMethods  []string
	AllowHeaders  []string
	ExposeHeaders []string
	MaxAge        int // seconds
}

// API is the sync API's policy. The client sends a bearer token, a JSON
// body and its Idempotency-Key; it must read Idempotent-Replayed (to tell a
// replay) and Retry-After (to honour it), which a browser hides from a
// cross-origin page unless they are exposed.
var API = Policy{
	AllowMethods:  []string{"GET", "POST", "DELETE"},
	AllowHeaders:  []string{"authorization", "content-type", "idempotency-key"},
	ExposeHeaders: []string{"idempotent-replayed", "retry-after"},
	MaxAge:        600,
}

// Origins says which origins may call the dev server: any loopback origin
// (localhost or 127.0.0.1, any scheme and port), where a developer's pages
// are served, and the listed ones (exactly, or all for "*").
type Origins struct {
	Listed []string
}

// ParseOrigins reads a comma-separated list, as the template's
// CorsAllowOrigins parameter is written.
func ParseOrigins(list string) Origins {
	var o Origins
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.Listed = append(o.Listed, strings.TrimSuffix(s, "/"))
		}
	}
	return o
}

// Allows reports whether a page of origin may call the API.
func (o Origins) Allows(origin string) bool {
	if origin == "" {
		return false
	}
	if slices.Contains(o.Listed, "*") || slices.Contains(o.Listed, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || h == "127.0.0.1"
}

// Wrap answers CORS for next as API Gateway does with this policy: it
// answers a preflight (OPTIONS with Origin and Access-Control-Request-Method)
// itself, with 204 and the policy's headers when the origin is allowed and
// with none when it is not; on every other request it drops any CORS header
// next sets (API Gateway ignores the integration's) and adds the allowed
// origin and the exposed headers.
func (p Policy) Wrap(origins Origins, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		allowed := origins.Allows(origin)
		if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			h := w.Header()
			h.Add("Vary", "Origin")
			if allowed {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Methods", strings.Join(p.AllowMethods, ","))
				h.Set("Access-Control-Allow-Headers", strings.Join(p.AllowHeaders, ","))
				h.Set("Access-Control-Max-Age", strconv.Itoa(p.MaxAge))
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(&corsWriter{ResponseWriter: w, origin: origin, allowed: allowed, policy: p}, r)
	})
}

// corsWriter sets the CORS headers of an actual request just before the
// status line goes out, over whatever the handler set.
type corsWriter struct {
	http.ResponseWriter
	origin  string
	allowed bool
	policy  Policy
	wrote   bool
}

func (c *corsWriter) WriteHeader(status int) {
	if !c.wrote {
		c.wrote = true
		h := c.Header()
		for k := range h {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				h.Del(k)
			}
		}
		if c.origin != "" {
			h.Add("Vary", "Origin")
		}
		if c.allowed {
			h.Set("Access-Control-Allow-Origin", c.origin)
			h.Set("Access-Control-Expose-Headers", strings.Join(c.policy.ExposeHeaders, ","))
		}
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *corsWriter) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}
