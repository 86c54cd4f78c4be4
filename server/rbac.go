// SPDX-License-Identifier: Apache-2.0

package server

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/authz/audit"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

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
// (its config or a per-route override). It returns nil for rules that
// enforce nothing: absent, or of action LOG (gRFC A41). The rules were
// validated by package resources; an error here is an audit logger the
// server lacks, or a matcher gRPC cannot build.
func newRBACEngine(filter string, rules *v3rbacconfigpb.RBAC, auditors map[string]audit.LoggerBuilder) (*rbacEngine, error) {
	if rules == nil || rules.GetAction() == v3rbacconfigpb.RBAC_LOG {
		return nil, nil
	}
	e := &rbacEngine{filter: filter, allow: rules.GetAction() == v3rbacconfigpb.RBAC_ALLOW}
	if !e.allow && rules.GetAction() != v3rbacconfigpb.RBAC_DENY {
		return nil, fmt.Errorf("unsupported action %s", rules.GetAction())
	}
	for _, name := range slices.Sorted(maps.Keys(rules.GetPolicies())) {
		p := rules.GetPolicies()[name]
		rp := rbacPolicy{name: name}
		for i, perm := range p.GetPermissions() {
			m, err := permissionMatcher(perm)
			if err != nil {
				return nil, fmt.Errorf("policies[%q].permissions[%d]: %w", name, i, err)
			}
			rp.permissions = append(rp.permissions, m)
		}
		for i, pr := range p.GetPrincipals() {
			m, err := principalMatcher(pr)
			if err != nil {
				return nil, fmt.Errorf("policies[%q].principals[%d]: %w", name, i, err)
			}
			rp.principals = append(rp.principals, m)
		}
		e.policies = append(e.policies, rp)
	}
	ac, err := buildAudit(rules.GetAuditLoggingOptions(), auditors)
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

// addrOf returns the IP and port of a, unmapped.
func addrOf(a net.Addr) (netip.AddrPort, bool) {
	if tcp, ok := a.(*net.TCPAddr); ok {
		ap := tcp.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
	}
	if a == nil {
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

func (r *rpcInfo) remote() (netip.AddrPort, bool) {
	if r.peer == nil {
		return netip.AddrPort{}, false
	}
	return addrOf(r.peer.Addr)
}

func (r *rpcInfo) local() (netip.AddrPort, bool) {
	if r.peer == nil {
		return netip.AddrPort{}, false
	}
	return addrOf(r.peer.LocalAddr)
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

// permissionMatcher compiles a permission (gRFC A41): metadata never
// matches (inverted, always), requested_server_name matches when its
// matcher matches "".
func permissionMatcher(p *v3rbacconfigpb.Permission) (rbacMatcher, error) {
	switch r := p.GetRule().(type) {
	case *v3rbacconfigpb.Permission_AndRules:
		ms, err := permissionList(r.AndRules.GetRules())
		return andMatcher(ms), err
	case *v3rbacconfigpb.Permission_OrRules:
		ms, err := permissionList(r.OrRules.GetRules())
		return orMatcher(ms), err
	case *v3rbacconfigpb.Permission_NotRule:
		m, err := permissionMatcher(r.NotRule)
		return notMatcher{m}, err
	case *v3rbacconfigpb.Permission_Any:
		return constant(true), nil
	case *v3rbacconfigpb.Permission_Header:
		return newHeaderMatcher(r.Header)
	case *v3rbacconfigpb.Permission_UrlPath:
		sm, err := resources.StringMatcherFromProto(r.UrlPath.GetPath())
		return pathMatcher{sm}, err
	case *v3rbacconfigpb.Permission_DestinationIp:
		return newIPMatcher(r.DestinationIp, true)
	case *v3rbacconfigpb.Permission_DestinationPort:
		return portMatcher(r.DestinationPort), nil
	case *v3rbacconfigpb.Permission_Metadata:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC reads metadata (as never matching)
		return constant(r.Metadata.GetInvert()), nil
	case *v3rbacconfigpb.Permission_RequestedServerName:
		sm, err := resources.StringMatcherFromProto(r.RequestedServerName)
		return constant(err == nil && sm.Match("")), err
	default:
		return nil, fmt.Errorf("unsupported permission rule %T", r)
	}
}

func permissionList(ps []*v3rbacconfigpb.Permission) ([]rbacMatcher, error) {
	out := make([]rbacMatcher, 0, len(ps))
	for _, p := range ps {
		m, err := permissionMatcher(p)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// principalMatcher compiles a principal (gRFC A41): source_ip,
// direct_remote_ip and remote_ip are the peer's address.
func principalMatcher(p *v3rbacconfigpb.Principal) (rbacMatcher, error) {
	switch id := p.GetIdentifier().(type) {
	case *v3rbacconfigpb.Principal_AndIds:
		ms, err := principalList(id.AndIds.GetIds())
		return andMatcher(ms), err
	case *v3rbacconfigpb.Principal_OrIds:
		ms, err := principalList(id.OrIds.GetIds())
		return orMatcher(ms), err
	case *v3rbacconfigpb.Principal_NotId:
		m, err := principalMatcher(id.NotId)
		return notMatcher{m}, err
	case *v3rbacconfigpb.Principal_Any:
		return constant(true), nil
	case *v3rbacconfigpb.Principal_Authenticated_:
		if id.Authenticated.GetPrincipalName() == nil {
			return authenticatedMatcher{}, nil
		}
		sm, err := resources.StringMatcherFromProto(id.Authenticated.GetPrincipalName())
		return authenticatedMatcher{&sm}, err
	case *v3rbacconfigpb.Principal_SourceIp:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC still reads the deprecated source_ip (as direct_remote_ip)
		return newIPMatcher(id.SourceIp, false)
	case *v3rbacconfigpb.Principal_DirectRemoteIp:
		return newIPMatcher(id.DirectRemoteIp, false)
	case *v3rbacconfigpb.Principal_RemoteIp:
		return newIPMatcher(id.RemoteIp, false)
	case *v3rbacconfigpb.Principal_Header:
		return newHeaderMatcher(id.Header)
	case *v3rbacconfigpb.Principal_UrlPath:
		sm, err := resources.StringMatcherFromProto(id.UrlPath.GetPath())
		return pathMatcher{sm}, err
	case *v3rbacconfigpb.Principal_Metadata:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC reads metadata (as never matching)
		return constant(id.Metadata.GetInvert()), nil
	default:
		return nil, fmt.Errorf("unsupported principal identifier %T", id)
	}
}

func principalList(ps []*v3rbacconfigpb.Principal) ([]rbacMatcher, error) {
	out := make([]rbacMatcher, 0, len(ps))
	for _, p := range ps {
		m, err := principalMatcher(p)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// newHeaderMatcher compiles an RBAC header matcher (gRFC A41): the name
// lowercased, "host" matched as ":authority" (Envoy aliases them); the
// deprecated prefix, suffix and contains forms may be empty (then any
// present value matches), as RBAC validation takes them as they are.
func newHeaderMatcher(h *v3routepb.HeaderMatcher) (rbacMatcher, error) {
	var (
		hm  resources.HeaderMatcher
		err error
	)
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *v3routepb.HeaderMatcher_PrefixMatch:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC accepts the deprecated header match forms
		hm = resources.HeaderMatcher{Kind: resources.HeaderMatchPrefix, Value: s.PrefixMatch}
	case *v3routepb.HeaderMatcher_SuffixMatch:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC accepts the deprecated header match forms
		hm = resources.HeaderMatcher{Kind: resources.HeaderMatchSuffix, Value: s.SuffixMatch}
	case *v3routepb.HeaderMatcher_ContainsMatch:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC accepts the deprecated header match forms
		hm = resources.HeaderMatcher{Kind: resources.HeaderMatchContains, Value: s.ContainsMatch}
	default:
		if hm, err = resources.HeaderMatcherFromProto(h); err != nil {
			return nil, err
		}
	}
	hm.Name, hm.Invert = strings.ToLower(h.GetName()), h.GetInvertMatch()
	if hm.Name == "host" {
		hm.Name = ":authority"
	}
	return headerMatcher{hm}, nil
}

// newIPMatcher compiles a CIDR range, of the local address when local.
func newIPMatcher(c *v3corepb.CidrRange, local bool) (rbacMatcher, error) {
	p, err := netip.ParsePrefix(c.GetAddressPrefix() + "/" + strconv.FormatUint(uint64(c.GetPrefixLen().GetValue()), 10))
	if err != nil {
		return nil, fmt.Errorf("CIDR range: %w", err)
	}
	return ipMatcher{prefix: p.Masked(), local: local}, nil
}
