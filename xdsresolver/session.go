// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// Stateful session affinity (gRFC A55, A60), with DialOptions: the
// stateful session filter of the Listener (a CookieBasedSessionState,
// with the virtual host's and route's StatefulSessionPerRoute overrides)
// makes the interceptors read the session cookie of each RPC whose path
// the cookie's path matches: base64 of "<addresses>;<cluster>", the
// addresses of an endpoint joined with "," (gRPC C++'s format). The
// cluster, when it is one of the route's, is the RPC's cluster (A60); the
// router picks the first of the addresses whose SubConn is READY and
// whose health is in the cluster's override_host_status, waits for one
// that is IDLE (asking it to connect) or CONNECTING, else picks as usual.
// When the RPC's response headers (or its trailers, for a response
// without headers) come, the interceptors add a set-cookie naming the
// endpoint and cluster that served it, unless the cookie already did; the
// application keeps it and sends it with the next RPCs of the session.
//
// Every SubConn of a configuration with the filter is wrapped (subConn),
// so that the router knows the SubConn of each address and its state. A
// DRAINING endpoint is not given to the endpoint policies, but when the
// cluster's override_host_status has DRAINING, its READY SubConn is kept
// (the policy's Shutdown is not passed on) while the endpoint stays
// DRAINING and the connection READY: the sessions it has go on, no new
// session comes to it.

// The types of the stateful session filter's config and of its per-route
// override.
const (
	statefulSessionTypeURL         = "type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSession"
	statefulSessionPerRouteTypeURL = "type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute"
)

// hasSessionFilter reports whether filters has a stateful session filter.
func hasSessionFilter(filters []resources.HTTPFilter) bool {
	for _, f := range filters {
		if f.TypeURL == statefulSessionTypeURL {
			return true
		}
	}
	return false
}

// routeSession returns the session config of the RPCs of route r of
// virtual host vh: that of the first stateful session filter of the chain
// that keeps sessions, with the route's override, else the virtual
// host's (gRFC A39); nil when none does. Package resources validated and
// decoded every config and override.
func routeSession(filters []resources.HTTPFilter, vh *resources.VirtualHost, r *resources.Route) (*resources.CookieSession, error) {
	for _, f := range filters {
		if f.TypeURL != statefulSessionTypeURL {
			continue
		}
		cs := f.Session
		o, ok := r.FilterOverrides[f.Name]
		if !ok {
			o, ok = vh.FilterOverrides[f.Name]
		}
		if ok {
			if o.TypeURL != statefulSessionTypeURL && o.TypeURL != statefulSessionPerRouteTypeURL {
				// An override of another filter type.
				return nil, fmt.Errorf("type URL %q, want a StatefulSession or StatefulSessionPerRoute", o.TypeURL)
			}
			cs = o.Session
		}
		if cs != nil {
			return cs, nil
		}
	}
	return nil, nil
}

// cookiePathMatches reports whether the RPC path matches the cookie path
// (RFC 6265 section 5.1.4, as gRPC C++): "" matches every path; else the
// cookie path is a prefix of the RPC's, which is equal to it, or goes on
// with a '/', or the cookie path ends with '/'.
func cookiePathMatches(cookiePath, path string) bool {
	if cookiePath == "" {
		return true
	}
	if !strings.HasPrefix(path, cookiePath) {
		return false
	}
	return len(path) == len(cookiePath) || cookiePath[len(cookiePath)-1] == '/' || path[len(cookiePath)] == '/'
}

// rpcSession is the session state of one RPC, shared by the interceptor
// and the router's picker through the RPC's routeChoice.
type rpcSession struct {
	cfg *resources.CookieSession
	// override are the addresses the cookie names, in order; nil for
	// none (no cookie, or an invalid one).
	override []string
	// cookieAddrs and cookieCluster are what the cookie said ("" for no
	// cookie), to tell whether the response needs a new one.
	cookieAddrs, cookieCluster string
	// picked is what the RPC's last pick chose; written by the picker.
	picked atomic.Pointer[pickedEndpoint]
}

// pickedEndpoint is the endpoint and route cluster of a pick.
type pickedEndpoint struct {
	addrs   string // the endpoint's addresses, joined with ","
	cluster string
}

// sessionFromHeaders returns the session of an RPC of cfg: its cookie
// (from the headers h) parsed; and the target of route rt to send it to:
// the cookie's cluster when it is one of rt's (gRFC A60), else target.
func sessionFromHeaders(cfg *resources.CookieSession, h *routing.Headers, rt *route, target *weightedTarget) (*rpcSession, *weightedTarget) {
	s := &rpcSession{cfg: cfg}
	value, ok := cookieValue(h, cfg.Name)
	if ok {
		s.cookieAddrs, s.cookieCluster, _ = strings.Cut(value, ";")
		if s.cookieCluster != "" {
			for i := range rt.targets {
				if rt.targets[i].cluster == resources.CanonicalName(s.cookieCluster) {
					target = &rt.targets[i]
					break
				}
			}
		}
		for _, a := range strings.Split(s.cookieAddrs, ",") {
			if validAddr(a) {
				s.override = append(s.override, a)
			}
		}
	}
	return s, target
}

// validAddr reports whether a is an IP:port.
func validAddr(a string) bool {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return false
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return false
	}
	p, err := strconv.ParseUint(port, 10, 16)
	return err == nil && p > 0
}

// cookieValue returns the base64-decoded value of the first cookie named
// name in the RPC's cookie headers.
func cookieValue(h *routing.Headers, name string) (string, bool) {
	var vs []string
	switch {
	case h.MD != nil:
		vs = h.MD.Get("cookie")
	case h.Ctx != nil:
		vs = metadata.ValueFromOutgoingContext(h.Ctx, "cookie")
	}
	for _, v := range vs {
		for c := range strings.SplitSeq(v, ";") {
			k, val, ok := strings.Cut(strings.TrimSpace(c), "=")
			if !ok || k != name {
				continue
			}
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(val); err == nil {
					return string(b), true
				}
			}
			return "", false // the first cookie of that name decides
		}
	}
	return "", false
}

// setCookie returns the set-cookie header value for the response of the
// RPC, and whether one is needed: when the endpoint that served it, or
// its cluster, is not the cookie's (gRPC C++'s format: the value, then
// HttpOnly, Path and Max-Age).
func (s *rpcSession) setCookie() (string, bool) {
	p := s.picked.Load()
	if p == nil || (p.addrs == s.cookieAddrs && p.cluster == resources.CanonicalName(s.cookieCluster)) {
		return "", false
	}
	v := s.cfg.Name + "=" + base64.StdEncoding.EncodeToString([]byte(p.addrs+";"+p.cluster)) + "; HttpOnly"
	if s.cfg.Path != "" {
		v += "; Path=" + s.cfg.Path
	}
	if secs := int64(s.cfg.TTL.Seconds()); secs > 0 {
		v += "; Max-Age=" + strconv.FormatInt(secs, 10)
	}
	return v, true
}

// unary runs a unary RPC of session s: it captures the response headers
// and trailers, and adds the set-cookie to those the application asked
// for (grpc.Header, or grpc.Trailer when the response had no headers).
func (s *rpcSession) unary(invoke func(opts []grpc.CallOption) error, opts []grpc.CallOption) error {
	var hdr metadata.MD
	err := invoke(append(opts[:len(opts):len(opts)], grpc.Header(&hdr)))
	v, ok := s.setCookie()
	if !ok {
		return err
	}
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			if hdr != nil && o.HeaderAddr != nil {
				*o.HeaderAddr = withCookie(*o.HeaderAddr, v)
			}
		case grpc.TrailerCallOption:
			if hdr == nil && o.TrailerAddr != nil {
				*o.TrailerAddr = withCookie(*o.TrailerAddr, v)
			}
		}
	}
	return err
}

// withCookie returns a copy of md with the set-cookie v.
func withCookie(md metadata.MD, v string) metadata.MD {
	md = md.Copy()
	if md == nil {
		md = metadata.MD{}
	}
	md.Append("set-cookie", v)
	return md
}

// sessionStream is a stream of a session: its headers (or, when the
// response has none, its trailers) carry the set-cookie.
type sessionStream struct {
	grpc.ClientStream
	s *rpcSession
}

func (st *sessionStream) Header() (metadata.MD, error) {
	md, err := st.ClientStream.Header()
	if err != nil || md == nil {
		return md, err
	}
	if v, ok := st.s.setCookie(); ok {
		md = withCookie(md, v)
	}
	return md, nil
}

func (st *sessionStream) Trailer() metadata.MD {
	md := st.ClientStream.Trailer()
	if hdr, err := st.ClientStream.Header(); err == nil && hdr != nil {
		return md // the headers had the cookie
	}
	if v, ok := st.s.setCookie(); ok {
		md = withCookie(md, v)
	}
	return md
}

// sessHost is an endpoint address that sessions may be pinned to.
type sessHost struct {
	addr, addrs string // the address, and its endpoint's addresses joined with ","
	health      resources.HealthStatus
	allowed     bool // health is in the cluster's override_host_status
	locality    resources.LocalityID
}

// sessEntry is what the router knows of an address for sessions.
type sessEntry struct {
	addrs    string
	allowed  bool
	draining bool // allowed and DRAINING: not given to the endpoint policy; an orphan may serve it
	locality resources.LocalityID
	sc       atomic.Pointer[subConn] // the address's latest SubConn; nil when none
}

// sessGroup is what the router knows for sessions of one priority of a
// leaf cluster: its addresses, their SubConns, and the SubConns it keeps
// for DRAINING endpoints (orphans). Safe for concurrent use: pickers read
// the entries without lock.
type sessGroup struct {
	entries atomic.Pointer[map[string]*sessEntry] // by address; replaced on updates

	mu      sync.Mutex
	orphans map[*subConn]bool
}

func newSessGroup() *sessGroup {
	g := &sessGroup{orphans: make(map[*subConn]bool)}
	g.entries.Store(&map[string]*sessEntry{})
	return g
}

// entry returns the entry of addr, nil when none.
func (g *sessGroup) entry(addr string) *sessEntry { return (*g.entries.Load())[addr] }

// update makes hosts the addresses of g, keeping the SubConns of those
// that stay, and shuts down the orphans sessions may no longer use.
func (g *sessGroup) update(hosts []sessHost) {
	old := *g.entries.Load()
	m := make(map[string]*sessEntry, len(hosts))
	for _, h := range hosts {
		e := &sessEntry{addrs: h.addrs, allowed: h.allowed, draining: h.allowed && h.health == resources.HealthStatusDraining, locality: h.locality}
		if o := old[h.addr]; o != nil {
			e.sc.Store(o.sc.Load())
		}
		m[h.addr] = e
	}
	g.entries.Store(&m)
	g.mu.Lock()
	var drop []*subConn
	for sc := range g.orphans {
		if e := m[sc.addr]; e == nil || !e.draining || e.sc.Load() != sc {
			drop = append(drop, sc)
			delete(g.orphans, sc)
		}
	}
	g.mu.Unlock()
	for _, sc := range drop {
		sc.SubConn.Shutdown()
	}
}

// adopt keeps sc, whose child shut it down, for sessions.
func (g *sessGroup) adopt(sc *subConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.orphans[sc] = true
}

// forget notes that sc is shut down.
func (g *sessGroup) forget(sc *subConn) {
	if e := g.entry(sc.addr); e != nil {
		e.sc.CompareAndSwap(sc, nil)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.orphans, sc)
}

// close shuts down the orphans.
func (g *sessGroup) close() {
	g.mu.Lock()
	drop := g.orphans
	g.orphans = make(map[*subConn]bool)
	g.mu.Unlock()
	for sc := range drop {
		sc.SubConn.Shutdown()
	}
}

// pick picks for a session pinned to addrs (gRFC A55): the first READY
// SubConn (not ejected) of an allowed address; else, when one is IDLE, it
// asks it to connect and the RPC waits, as when one is CONNECTING; else
// ok is false: the endpoint policy picks.
func (g *sessGroup) pick(addrs []string) (sc *subConn, e *sessEntry, err error, ok bool) {
	var idle *subConn
	connecting := false
	for _, a := range addrs {
		en := g.entry(a)
		if en == nil || !en.allowed {
			continue
		}
		s := en.sc.Load()
		if s == nil || s.ejectedNow.Load() {
			continue
		}
		switch connectivity.State(s.state.Load()) {
		case connectivity.Ready:
			return s, en, nil, true
		case connectivity.Idle:
			if idle == nil {
				idle = s
			}
		case connectivity.Connecting:
			connecting = true
		}
	}
	if idle != nil {
		idle.Connect()
		return nil, nil, balancer.ErrNoSubConnAvailable, true
	}
	if connecting {
		return nil, nil, balancer.ErrNoSubConnAvailable, true
	}
	return nil, nil, nil, false
}

// updateSessLocked makes the sessions of p follow its hosts, creating
// them if needed; the caller holds mu.
func (r *router) updateSessLocked(p *priorityConfig) {
	k := odKey(p)
	g := r.sess[k]
	if g == nil {
		g = newSessGroup()
		r.sess[k] = g
	}
	g.update(p.hosts)
}
