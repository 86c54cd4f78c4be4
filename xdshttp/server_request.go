// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"

	"github.com/spiffe/go-spiffe/v2/svid/x509svid"

	"github.com/proxyless/xds/internal/filterchain"
	"github.com/proxyless/xds/internal/rbac"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/internal/xdslog"
)

// ServeHTTP routes and authorizes one request of the chain with its
// current route table, as Envoy's HTTP connection manager would before
// its router, then hands it to the application's handler:
//
//   - the virtual host by Host (":authority"), the first route that
//     matches the path (without the query) and headers (gRFC A28's
//     matcher, with Envoy's view of HTTP headers); none: 404, Envoy's
//     answer when no route matches ("NR");
//   - the route's RBAC filters (gRFC A41, the filter's or the route's or
//     virtual host's RBACPerRoute): a denied request gets 403 "RBAC:
//     access denied", as from Envoy's RBAC filter;
//   - the route's action must be non_forwarding_action: another gets 503,
//     as Envoy answers a route whose cluster it does not have (its
//     cluster_not_found_response_code, 503 by default), and as gRPC
//     fails such an RPC with UNAVAILABLE;
//   - a RouteConfiguration that does not exist or an RBAC filter the
//     server cannot apply: 503.
func (ch *httpChain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := ch.routes.Load()
	if err := t.Err(); err != nil {
		ch.refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("xds: %v (node %q)", err, ch.s.nodeID))
		return
	}
	path := r.URL.EscapedPath()
	hs := &routing.HTTPHeaders{Authority: r.Host, Method: r.Method, Path: r.RequestURI, Scheme: "http", Fields: r.Header}
	if r.TLS != nil {
		hs.Scheme = "https"
	}
	vh, rt, err := t.Route(r.Host, path, &routing.Headers{Source: hs})
	switch {
	case err != nil:
		ch.refuse(w, r, http.StatusNotFound, fmt.Sprintf("xds: RouteConfiguration %q: authority %q: %v (node %q)", t.RouteConfigName(), r.Host, err, ch.s.nodeID))
		return
	case rt == nil:
		ch.refuse(w, r, http.StatusNotFound, fmt.Sprintf("xds: the request matched no route of virtual host %q (node %q)", vh.Name, ch.s.nodeID))
		return
	}
	if rt.Enforcing() {
		if e, policy := rt.Authorize(&httpRequest{r: r, headers: hs, path: path}); e != nil {
			ch.s.logger.Debug("request denied by RBAC", xdslog.KeyFilterChain, ch.label, xdslog.KeyHTTPFilter, e.Filter(), xdslog.KeyPolicy, policy, xdslog.KeyPath, path)
			http.Error(w, "RBAC: access denied", http.StatusForbidden)
			return
		}
	}
	if !rt.NonForwarding() {
		ch.refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("xds: the request matched route %d of virtual host %q, whose action is not non_forwarding_action (node %q)", rt.Index, vh.Name, ch.s.nodeID))
		return
	}
	ch.s.handler.ServeHTTP(w, r)
}

// refuse answers a request the configuration does not let through.
func (ch *httpChain) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	ch.s.logger.Debug("request refused", xdslog.KeyFilterChain, ch.label, xdslog.KeyStatus, code, xdslog.KeyPath, r.URL.EscapedPath(), xdslog.KeyError, msg)
	http.Error(w, msg, code)
}

// httpRequest is what RBAC sees of an HTTP request: its path, its headers
// as route matching sees them (pseudo-headers included), its
// connection's addresses and TLS state.
type httpRequest struct {
	r       *http.Request
	headers *routing.HTTPHeaders
	path    string
}

var _ rbac.Request = (*httpRequest)(nil)

// Path returns the path without the query (url_path: Envoy's
// PathMatcher matches :path with the query removed).
func (q *httpRequest) Path() string { return q.path }

func (q *httpRequest) Header(name string) (string, bool) { return q.headers.Header(name) }

// LocalAddr returns the connection's local address (net/http's
// LocalAddrContextKey).
func (q *httpRequest) LocalAddr() (netip.AddrPort, bool) {
	a, _ := q.r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return filterchain.AddrPort(a)
}

// RemoteAddr returns the peer's address: the connection's, never
// X-Forwarded-For (the server is the edge).
func (q *httpRequest) RemoteAddr() (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(q.r.RemoteAddr)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

func (q *httpRequest) PeerCertificates() ([]*x509.Certificate, bool) {
	if q.r.TLS == nil {
		return nil, false
	}
	return q.r.TLS.PeerCertificates, true
}

// ServerName returns the SNI of the TLS handshake (requested_server_name).
func (q *httpRequest) ServerName() string {
	if q.r.TLS == nil {
		return ""
	}
	return q.r.TLS.ServerName
}

// SPIFFEID returns the SPIFFE ID of the client certificate: its one URI
// SAN when that is a SPIFFE ID, as gRPC reads it.
func (q *httpRequest) SPIFFEID() string {
	certs, _ := q.PeerCertificates()
	if len(certs) == 0 {
		return ""
	}
	id, err := x509svid.IDFromCert(certs[0])
	if err != nil {
		return ""
	}
	return id.String()
}
