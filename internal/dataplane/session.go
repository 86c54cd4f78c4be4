// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/proxyless/xds/resources"
)

// Stateful session affinity (gRFC A55, A60): the stateful session filter
// of the Listener (a CookieBasedSessionState, with the virtual host's and
// route's StatefulSessionPerRoute overrides) pins the requests of a
// session to an endpoint. A request whose path the cookie's path matches
// (CookiePathMatches) carries the cookie, base64 of "<addresses>;<cluster>",
// the addresses of an endpoint joined with "," (gRPC C++'s format):
// NewSession parses it, and sends the request to that cluster when it is
// one of the route's (A60). The data path picks the first of the
// addresses that the priority's SessionTable allows and that it can use
// (a gRPC channel: a READY connection, not ejected), else picks as usual;
// it records what it picked (Session.Picked), and the response carries
// Session.SetCookie when the cookie did not name that endpoint and
// cluster.

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

// routeSession returns the session config of the requests of route r of
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

// CookiePathMatches reports whether the request path matches the cookie
// path (RFC 6265 section 5.1.4, as gRPC C++): "" matches every path; else
// the cookie path is a prefix of the request's, which is equal to it, or
// goes on with a '/', or the cookie path ends with '/'.
func CookiePathMatches(cookiePath, path string) bool {
	if cookiePath == "" {
		return true
	}
	if !strings.HasPrefix(path, cookiePath) {
		return false
	}
	return len(path) == len(cookiePath) || cookiePath[len(cookiePath)-1] == '/' || path[len(cookiePath)] == '/'
}

// Session is the session state of one request: what its cookie said, and
// what its pick chose. The request's pick writes Picked, its response
// reads SetCookie: they may run on different goroutines.
type Session struct {
	Cfg *resources.CookieSession
	// Override are the addresses the cookie names (those that are an
	// IP:port), in order; nil for none (no cookie, or an invalid one).
	Override []string
	// CookieAddrs and CookieCluster are what the cookie said ("" for no
	// cookie), to tell whether the response needs a new one.
	CookieAddrs, CookieCluster string
	picked                     atomic.Pointer[pickedEndpoint]
}

// pickedEndpoint is the endpoint and route cluster of a pick.
type pickedEndpoint struct {
	addrs   string // the endpoint's addresses, joined with ","
	cluster string
}

// NewSession returns the session of a request of route rt whose session
// config is cfg (rt.Session), whose cookie headers have the values
// cookies (each "name=value; name=value"), sent to target; and the target
// to send it to: the cookie's cluster when it is one of rt's (gRFC A60),
// else target.
func NewSession(cfg *resources.CookieSession, cookies []string, rt *Route, target *Target) (*Session, *Target) {
	s := &Session{Cfg: cfg}
	value, ok := cookieValue(cookies, cfg.Name)
	if ok {
		s.CookieAddrs, s.CookieCluster, _ = strings.Cut(value, ";")
		if s.CookieCluster != "" {
			if t := rt.TargetOf(resources.CanonicalName(s.CookieCluster)); t != nil {
				target = t
			}
		}
		for a := range strings.SplitSeq(s.CookieAddrs, ",") {
			if validAddr(a) {
				s.Override = append(s.Override, a)
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
// name in the cookie header values vs.
func cookieValue(vs []string, name string) (string, bool) {
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

// Picked records that the request's pick chose the endpoint of addresses
// addrs (joined with ",") of the route cluster cluster.
func (s *Session) Picked(addrs, cluster string) {
	s.picked.Store(&pickedEndpoint{addrs: addrs, cluster: cluster})
}

// SetCookie returns the set-cookie header value for the response of the
// request, and whether one is needed: when the endpoint that served it,
// or its cluster, is not the cookie's (gRPC C++'s format: the value, then
// HttpOnly, Path and Max-Age).
func (s *Session) SetCookie() (string, bool) {
	p := s.picked.Load()
	if p == nil || (p.addrs == s.CookieAddrs && p.cluster == resources.CanonicalName(s.CookieCluster)) {
		return "", false
	}
	v := s.Cfg.Name + "=" + base64.StdEncoding.EncodeToString([]byte(p.addrs+";"+p.cluster)) + "; HttpOnly"
	if s.Cfg.Path != "" {
		v += "; Path=" + s.Cfg.Path
	}
	if secs := int64(s.Cfg.TTL.Seconds()); secs > 0 {
		v += "; Max-Age=" + strconv.FormatInt(secs, 10)
	}
	return v, true
}

// SessionEntry is what a SessionTable knows of an address.
type SessionEntry[C any] struct {
	// Addrs are the addresses of the address's endpoint, joined with ",".
	Addrs string
	// Allowed: the endpoint's health is in the cluster's
	// override_host_status: sessions may be pinned to it.
	Allowed bool
	// Draining: Allowed and DRAINING: the endpoint takes no new session,
	// and is not given to the endpoint policy; its connection may serve
	// the sessions it has.
	Draining bool
	Locality resources.LocalityID
	// Conn is the data path's connection to the address (a gRPC
	// SubConn); nil when none. Kept across updates while the address
	// stays.
	Conn atomic.Pointer[C]
}

// SessionTable maps the addresses of one priority's SessionHosts to
// their entries, whose Conn the data path sets. Entry is lock-free and
// safe for concurrent use with Update, which one goroutine calls at a
// time.
type SessionTable[C any] struct {
	entries atomic.Pointer[map[string]*SessionEntry[C]]
}

// NewSessionTable returns an empty table.
func NewSessionTable[C any]() *SessionTable[C] {
	t := &SessionTable[C]{}
	t.entries.Store(&map[string]*SessionEntry[C]{})
	return t
}

// Entry returns the entry of addr, nil when none.
func (t *SessionTable[C]) Entry(addr string) *SessionEntry[C] { return (*t.entries.Load())[addr] }

// Update makes hosts the addresses of t, keeping the Conn of those that
// stay, and returns the new entries by address.
func (t *SessionTable[C]) Update(hosts []SessionHost) map[string]*SessionEntry[C] {
	old := *t.entries.Load()
	m := make(map[string]*SessionEntry[C], len(hosts))
	for _, h := range hosts {
		e := &SessionEntry[C]{Addrs: h.Addrs, Allowed: h.Allowed, Draining: h.Allowed && h.Health == resources.HealthStatusDraining, Locality: h.Locality}
		if o := old[h.Addr]; o != nil {
			e.Conn.Store(o.Conn.Load())
		}
		m[h.Addr] = e
	}
	t.entries.Store(&m)
	return m
}
