// SPDX-License-Identifier: Apache-2.0

// Package rbac is the RBAC HTTP filter of an xDS-enabled server (gRFC
// A41) with its audit logging (gRFC A59): the filter's rules compiled
// into an Engine that authorizes one request, described by a Request. The
// gRPC server (package server) describes an RPC, the net/http server
// (package xdshttp) an HTTP request; the rules mean the same to both.
package rbac

import (
	"crypto/x509"
	"net/netip"

	"google.golang.org/grpc/authz/audit"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// Request is what RBAC sees of one request. Its methods are called only
// for the rules that need them, at most once per rule, on the goroutine
// that called Authorize.
type Request interface {
	// Path is what url_path matches, and the event's FullMethodName of an
	// audit log: an RPC's full method name "/pkg.Service/Method", an HTTP
	// request's path without the query.
	Path() string
	// Header returns the value a header matcher named name (lowercase)
	// matches, the values of a repeated header joined with ",", and
	// whether the request has it; pseudo-headers included (":path",
	// ":method", ":authority").
	Header(name string) (string, bool)
	// LocalAddr and RemoteAddr are the connection's addresses, false when
	// unknown.
	LocalAddr() (netip.AddrPort, bool)
	RemoteAddr() (netip.AddrPort, bool)
	// PeerCertificates returns the client's certificate chain, leaf
	// first, and whether the connection is TLS.
	PeerCertificates() (chain []*x509.Certificate, isTLS bool)
	// ServerName is the server name the client asked for in its TLS
	// handshake (SNI), "" when it is unknown or there is none.
	ServerName() string
	// SPIFFEID is the client certificate's SPIFFE ID, "" without one: the
	// principal of an audit event (gRFC A59).
	SPIFFEID() string
}

// Engine is one RBAC filter's rules, compiled (gRFC A41): its action,
// its policies in name order and its audit logging (gRFC A59). It is
// immutable and safe for concurrent use.
type Engine struct {
	filter   string // the HTTP filter's name: the audit events' policy name
	allow    bool   // action ALLOW; DENY otherwise
	policies []policy
	audit    *auditConfig // nil: nothing logged
}

type policy struct {
	name        string
	permissions []matcher // any of them
	principals  []matcher // any of them
}

// NewEngine compiles rules, the rules of the RBAC filter named filter
// (its config or a per-route override), as package resources decoded
// them, with the audit loggers by name. It returns nil for rules that
// enforce nothing (nil: absent, or of action LOG, gRFC A41). An error is
// an audit logger config that no logger serves or that its logger
// rejects (see buildAudit).
func NewEngine(filter string, rules *resources.RBACRules, auditors map[string]audit.LoggerBuilder) (*Engine, error) {
	if rules == nil {
		return nil, nil
	}
	e := &Engine{filter: filter, allow: rules.Allow}
	for _, p := range rules.Policies {
		e.policies = append(e.policies, policy{name: p.Name, permissions: matchers(p.Permissions), principals: matchers(p.Principals)})
	}
	ac, err := buildAudit(rules.Audit, auditors)
	if err != nil {
		return nil, err
	}
	e.audit = ac
	return e, nil
}

// Filter returns the name of the engine's HTTP filter.
func (e *Engine) Filter() string { return e.filter }

// Allow reports whether the engine's action is ALLOW (DENY otherwise).
func (e *Engine) Allow() bool { return e.allow }

// Authorize applies e to the request r (gRFC A41): an ALLOW engine
// authorizes the requests that match one of its policies, a DENY engine
// those that match none. A policy matches when one of its permissions and
// one of its principals do; policies are tried in name order and the
// first that matches is the matched rule of the audit event (gRFC A59).
// It reports the decision and the matched policy.
func (e *Engine) Authorize(r Request) (ok bool, policy string) {
	matched := false
	for i := range e.policies {
		p := &e.policies[i]
		if anyMatch(p.permissions, r) && anyMatch(p.principals, r) {
			matched, policy = true, p.name
			break
		}
	}
	ok = matched == e.allow
	if e.audit != nil {
		e.audit.log(&audit.Event{
			FullMethodName: r.Path(),
			Principal:      r.SPIFFEID(),
			PolicyName:     e.filter,
			MatchedRule:    policy,
			Authorized:     ok,
		})
	}
	return ok, policy
}

// matcher is a compiled permission or principal.
type matcher interface {
	match(r Request) bool
}

func anyMatch(ms []matcher, r Request) bool {
	for _, m := range ms {
		if m.match(r) {
			return true
		}
	}
	return false
}

type (
	orMatcher  []matcher
	andMatcher []matcher
	notMatcher struct{ m matcher }
	constant   bool
	// headerMatcher matches a header (gRFC A41).
	headerMatcher struct{ hm resources.HeaderMatcher }
	// pathMatcher matches the path (url_path).
	pathMatcher struct{ sm resources.StringMatcher }
	// ipMatcher matches the peer's address (remote) or the local one.
	ipMatcher struct {
		prefix netip.Prefix
		local  bool
	}
	// portMatcher matches the local port (destination_port).
	portMatcher uint32
	// authenticatedMatcher matches a TLS connection's client certificate
	// (authenticated); a nil sm matches any TLS connection.
	authenticatedMatcher struct{ sm *resources.StringMatcher }
	// serverNameMatcher matches the TLS server name
	// (requested_server_name).
	serverNameMatcher struct{ sm resources.StringMatcher }
)

func (m orMatcher) match(r Request) bool { return anyMatch(m, r) }

func (m andMatcher) match(r Request) bool {
	for _, c := range m {
		if !c.match(r) {
			return false
		}
	}
	return true
}

func (m notMatcher) match(r Request) bool { return !m.m.match(r) }
func (m constant) match(Request) bool     { return bool(m) }

func (m headerMatcher) match(r Request) bool {
	v, ok := r.Header(m.hm.Name)
	return routing.MatchHeaderValue(&m.hm, v, ok)
}

func (m pathMatcher) match(r Request) bool { return m.sm.Match(r.Path()) }

func (m ipMatcher) match(r Request) bool {
	var (
		ap netip.AddrPort
		ok bool
	)
	if m.local {
		ap, ok = r.LocalAddr()
	} else {
		ap, ok = r.RemoteAddr()
	}
	return ok && m.prefix.Contains(ap.Addr())
}

func (m portMatcher) match(r Request) bool {
	ap, ok := r.LocalAddr()
	return ok && uint32(ap.Port()) == uint32(m)
}

// match follows gRFC A41: without TLS, no match; with principal_name,
// the client certificate's URI SANs if it has any, else its DNS SANs if
// it has any, else its subject (RFC 2253); without a client certificate,
// whether "" matches.
func (m authenticatedMatcher) match(r Request) bool {
	chain, isTLS := r.PeerCertificates()
	if !isTLS {
		return false
	}
	if m.sm == nil {
		return true
	}
	if len(chain) == 0 {
		return m.sm.Match("")
	}
	return matchPrincipalName(m.sm, chain[0])
}

func (m serverNameMatcher) match(r Request) bool { return m.sm.Match(r.ServerName()) }

func matchPrincipalName(sm *resources.StringMatcher, cert *x509.Certificate) bool {
	if len(cert.URIs) > 0 {
		for _, u := range cert.URIs {
			if sm.Match(u.String()) {
				return true
			}
		}
		return false
	}
	if len(cert.DNSNames) > 0 {
		for _, d := range cert.DNSNames {
			if sm.Match(d) {
				return true
			}
		}
		return false
	}
	return sm.Match(cert.Subject.String())
}

// matcherOf compiles a permission or principal (gRFC A41): metadata
// never matches (inverted, always); requested_server_name matches the
// request's ServerName (a gRPC server knows none: it matches when its
// matcher matches ""); source_ip, direct_remote_ip and remote_ip are the
// peer's address; a header named "host" is matched as ":authority"
// (Envoy aliases them).
func matcherOf(m *resources.RBACMatcher) matcher {
	switch m.Kind {
	case resources.RBACAnd:
		return andMatcher(matchers(m.Rules))
	case resources.RBACOr:
		return orMatcher(matchers(m.Rules))
	case resources.RBACNot:
		if len(m.Rules) != 1 {
			return constant(false) // cannot happen: resources gives one
		}
		return notMatcher{matcherOf(&m.Rules[0])}
	case resources.RBACAny:
		return constant(true)
	case resources.RBACHeader:
		hm := m.Header
		if hm.Name == "host" {
			hm.Name = ":authority"
		}
		return headerMatcher{hm}
	case resources.RBACURLPath:
		return pathMatcher{*m.String}
	case resources.RBACDestinationIP:
		return ipMatcher{prefix: m.CIDR, local: true}
	case resources.RBACDestinationPort:
		return portMatcher(m.Port)
	case resources.RBACRequestedServerName:
		return serverNameMatcher{*m.String}
	case resources.RBACMetadata:
		return constant(m.Invert)
	case resources.RBACAuthenticated:
		return authenticatedMatcher{m.String}
	case resources.RBACDirectRemoteIP, resources.RBACRemoteIP:
		return ipMatcher{prefix: m.CIDR}
	}
	return constant(false) // cannot happen: resources rejects the others
}

func matchers(ms []resources.RBACMatcher) []matcher {
	out := make([]matcher, 0, len(ms))
	for i := range ms {
		out = append(out, matcherOf(&ms[i]))
	}
	return out
}
