// SPDX-License-Identifier: Apache-2.0

package server

import (
	"crypto/x509"
	"encoding/base64"
	"net/netip"
	"strings"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/proxyless/xds/internal/filterchain"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// rbacEngine is one RBAC filter's rules, compiled (gRFC A41): its action,
// its policies in name order and its audit logging (gRFC A59). It is
// immutable and safe for concurrent use.
type rbacEngine struct {
	filter   string // the HTTP filter's name: the audit events' policy name
	allow    bool   // action ALLOW; DENY otherwise
	policies []rbacPolicy
	audit    *auditConfig // nil: nothing logged
}

type rbacPolicy struct {
	name        string
	permissions []rbacMatcher // any of them
	principals  []rbacMatcher // any of them
}

// newRBACEngine compiles rules, the rules of the RBAC filter named filter
// (its config or a per-route override), as package resources decoded
// them. It returns nil for rules that enforce nothing (nil: absent, or of
// action LOG, gRFC A41). An error is an audit logger the server lacks.
func newRBACEngine(filter string, rules *resources.RBACRules, auditors map[string]audit.LoggerBuilder) (*rbacEngine, error) {
	if rules == nil {
		return nil, nil
	}
	e := &rbacEngine{filter: filter, allow: rules.Allow}
	for _, p := range rules.Policies {
		e.policies = append(e.policies, rbacPolicy{name: p.Name, permissions: matchers(p.Permissions), principals: matchers(p.Principals)})
	}
	ac, err := buildAudit(rules.Audit, auditors)
	if err != nil {
		return nil, err
	}
	e.audit = ac
	return e, nil
}

// authorize applies e to the RPC described by r (gRFC A41): an ALLOW
// engine authorizes the RPCs that match one of its policies, a DENY
// engine those that match none. A policy matches when one of its
// permissions and one of its principals do; policies are tried in name
// order and the first that matches is the matched rule of the audit
// event (gRFC A59). It reports the decision and the matched policy.
func (e *rbacEngine) authorize(r *rpcInfo) (ok bool, policy string) {
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
			FullMethodName: r.method,
			Principal:      r.spiffeID(),
			PolicyName:     e.filter,
			MatchedRule:    policy,
			Authorized:     ok,
		})
	}
	return ok, policy
}

// rpcInfo is what RBAC sees of one RPC.
type rpcInfo struct {
	method string      // the full method name, "/pkg.Service/Method": url_path and :path
	md     metadata.MD // incoming metadata: the headers
	peer   *peer.Peer  // nil when gRPC gave none
}

// header returns the value RBAC matches a header matcher named name
// against (gRFC A41): ":method" is "POST" and ":path" the method; "te"
// is never present; other headers come from the metadata, the values of
// a multi-valued header joined with ",", those of a binary header
// ("-bin") base64-encoded.
func (r *rpcInfo) header(name string) (string, bool) {
	switch name {
	case ":method":
		return "POST", true
	case ":path":
		return r.method, true
	case "te":
		return "", false
	}
	vs := r.md.Get(name)
	if len(vs) == 0 {
		return "", false
	}
	if strings.HasSuffix(name, "-bin") {
		enc := make([]string, len(vs))
		for i, v := range vs {
			enc[i] = base64.RawStdEncoding.EncodeToString([]byte(v))
		}
		vs = enc
	}
	if len(vs) == 1 {
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}

// tlsInfo returns the connection's TLS info, and whether it has one.
func (r *rpcInfo) tlsInfo() (credentials.TLSInfo, bool) {
	if r.peer == nil {
		return credentials.TLSInfo{}, false
	}
	info, ok := r.peer.AuthInfo.(credentials.TLSInfo)
	return info, ok
}

// spiffeID returns the client's SPIFFE ID, "" without one: the principal
// of an audit event (gRFC A59).
func (r *rpcInfo) spiffeID() string {
	if info, ok := r.tlsInfo(); ok && info.SPIFFEID != nil {
		return info.SPIFFEID.String()
	}
	return ""
}

func (r *rpcInfo) remote() (netip.AddrPort, bool) {
	if r.peer == nil {
		return netip.AddrPort{}, false
	}
	return filterchain.AddrPort(r.peer.Addr)
}

func (r *rpcInfo) local() (netip.AddrPort, bool) {
	if r.peer == nil {
		return netip.AddrPort{}, false
	}
	return filterchain.AddrPort(r.peer.LocalAddr)
}

// rbacMatcher is a compiled permission or principal.
type rbacMatcher interface {
	match(r *rpcInfo) bool
}

func anyMatch(ms []rbacMatcher, r *rpcInfo) bool {
	for _, m := range ms {
		if m.match(r) {
			return true
		}
	}
	return false
}

type (
	orMatcher  []rbacMatcher
	andMatcher []rbacMatcher
	notMatcher struct{ m rbacMatcher }
	constant   bool
	// headerMatcher matches a header (gRFC A41).
	headerMatcher struct{ hm resources.HeaderMatcher }
	// pathMatcher matches the full method name (url_path).
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
)

func (m orMatcher) match(r *rpcInfo) bool { return anyMatch(m, r) }

func (m andMatcher) match(r *rpcInfo) bool {
	for _, c := range m {
		if !c.match(r) {
			return false
		}
	}
	return true
}

func (m notMatcher) match(r *rpcInfo) bool { return !m.m.match(r) }
func (m constant) match(*rpcInfo) bool     { return bool(m) }

func (m headerMatcher) match(r *rpcInfo) bool {
	v, ok := r.header(m.hm.Name)
	return routing.MatchHeaderValue(&m.hm, v, ok)
}

func (m pathMatcher) match(r *rpcInfo) bool { return m.sm.Match(r.method) }

func (m ipMatcher) match(r *rpcInfo) bool {
	var (
		ap netip.AddrPort
		ok bool
	)
	if m.local {
		ap, ok = r.local()
	} else {
		ap, ok = r.remote()
	}
	return ok && m.prefix.Contains(ap.Addr())
}

func (m portMatcher) match(r *rpcInfo) bool {
	ap, ok := r.local()
	return ok && uint32(ap.Port()) == uint32(m)
}

// match follows gRFC A41: without TLS, no match; with principal_name,
// the client certificate's URI SANs if it has any, else its DNS SANs if
// it has any, else its subject (RFC 2253); without a client certificate,
// whether "" matches.
func (m authenticatedMatcher) match(r *rpcInfo) bool {
	info, ok := r.tlsInfo()
	if !ok {
		return false
	}
	if m.sm == nil {
		return true
	}
	if len(info.State.PeerCertificates) == 0 {
		return m.sm.Match("")
	}
	return matchPrincipalName(m.sm, info.State.PeerCertificates[0])
}

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
// never matches (inverted, always); requested_server_name matches when
// its matcher matches ""; source_ip, direct_remote_ip and remote_ip are
// the peer's address; a header named "host" is matched as ":authority"
// (Envoy aliases them).
func matcherOf(m *resources.RBACMatcher) rbacMatcher {
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
		return constant(m.String.Match(""))
	case resources.RBACMetadata:
		return constant(m.Invert)
	case resources.RBACAuthenticated:
		return authenticatedMatcher{m.String}
	case resources.RBACDirectRemoteIP, resources.RBACRemoteIP:
		return ipMatcher{prefix: m.CIDR}
	}
	return constant(false) // cannot happen: resources rejects the others
}

func matchers(ms []resources.RBACMatcher) []rbacMatcher {
	out := make([]rbacMatcher, 0, len(ms))
	for i := range ms {
		out = append(out, matcherOf(&ms[i]))
	}
	return out
}
