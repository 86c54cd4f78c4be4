// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/anypb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// maxRBACDepth bounds the nesting of and/or/not rules this package walks,
// so that a hostile config cannot exhaust the stack. Protobuf decoding
// already limits nesting to 10,000 messages; gRPC has no lower limit, and
// no real policy comes close.
const maxRBACDepth = 100

// RBACRules are the rules of an RBAC filter's config
// (envoy.extensions.filters.http.rbac.v3.RBAC) or of a per-route override
// (RBACPerRoute), decoded as gRPC's RBAC engine reads them (gRFC A41):
// a Listener's HTTPFilter and a FilterOverride hold them (their RBAC
// field), so that no data path decodes the proto again. Rules that
// enforce nothing (absent, or of action LOG) are nil.
type RBACRules struct {
	// Allow is true for action ALLOW, which authorizes the requests that
	// match a policy; false for DENY, which authorizes those that match
	// none.
	Allow bool
	// Policies are the policies, sorted by name (the order in which gRPC
	// tries them, and so the matched rule of an audit event).
	Policies []RBACPolicy
	// Audit is audit_logging_options (gRFC A59); nil when nothing is
	// logged (unset, or audit_condition NONE).
	Audit *RBACAudit
}

// RBACPolicy is one policy: a request matches it when it matches one of
// its permissions and one of its principals.
type RBACPolicy struct {
	Name        string
	Permissions []RBACMatcher
	Principals  []RBACMatcher
}

// RBACMatcherKind says what an RBACMatcher matches.
type RBACMatcherKind int

// The permissions and principals gRPC's engine builds (gRFC A41).
const (
	// RBACAny matches every request (any).
	RBACAny RBACMatcherKind = iota + 1
	// RBACAnd matches when every one of Rules does (and_rules, and_ids).
	RBACAnd
	// RBACOr matches when one of Rules does (or_rules, or_ids).
	RBACOr
	// RBACNot matches when Rules[0] does not (not_rule, not_id).
	RBACNot
	// RBACHeader matches a request header with Header (header).
	RBACHeader
	// RBACURLPath matches the request's path with String (url_path).
	RBACURLPath
	// RBACDestinationIP matches the local address with CIDR
	// (destination_ip).
	RBACDestinationIP
	// RBACDestinationPort matches the local port with Port
	// (destination_port).
	RBACDestinationPort
	// RBACRequestedServerName is requested_server_name, whose matcher is
	// String: gRPC matches it against "" (it has no server name).
	RBACRequestedServerName
	// RBACMetadata is metadata, which gRPC never matches: the matcher
	// matches exactly when Invert is set.
	RBACMetadata
	// RBACAuthenticated matches a connection with TLS whose client
	// certificate matches String (authenticated.principal_name); with a
	// nil String, any TLS connection.
	RBACAuthenticated
	// RBACDirectRemoteIP matches the peer's address with CIDR
	// (direct_remote_ip, and the deprecated source_ip).
	RBACDirectRemoteIP
	// RBACRemoteIP matches the peer's address with CIDR (remote_ip: gRPC
	// has no proxy protocol, so it is the direct peer).
	RBACRemoteIP
)

// RBACMatcher is one permission or principal. Only the fields of its
// Kind are set.
type RBACMatcher struct {
	Kind RBACMatcherKind
	// Rules are the operands of RBACAnd and RBACOr (any number) and of
	// RBACNot (one).
	Rules []RBACMatcher
	// Header is RBACHeader's matcher, its name lowercased. The deprecated
	// prefix_match, suffix_match and contains_match may be empty (any
	// value then matches), as gRPC's engine takes them.
	Header HeaderMatcher
	// String is the matcher of RBACURLPath, RBACRequestedServerName and
	// RBACAuthenticated (nil there for any principal).
	String *StringMatcher
	// CIDR is the address range of RBACDestinationIP, RBACDirectRemoteIP
	// and RBACRemoteIP, masked.
	CIDR netip.Prefix
	// Port is RBACDestinationPort's port.
	Port uint32
	// Invert is RBACMetadata's invert.
	Invert bool
}

// RBACAuditCondition is audit_condition: which decisions are logged
// (gRFC A59). Its values are those of the proto enum.
type RBACAuditCondition int32

const (
	RBACAuditNone           RBACAuditCondition = 0
	RBACAuditOnDeny         RBACAuditCondition = 1
	RBACAuditOnAllow        RBACAuditCondition = 2
	RBACAuditOnDenyAndAllow RBACAuditCondition = 3
)

// RBACAudit is the audit logging of RBAC rules (gRFC A59).
type RBACAudit struct {
	// Condition is never RBACAuditNone.
	Condition RBACAuditCondition
	// Loggers are logger_configs, in order.
	Loggers []RBACAuditLogger
}

// RBACAuditLogger is one audit logger config. Which loggers exist is up
// to the application's registry, so the config is kept as received and
// not checked here.
type RBACAuditLogger struct {
	// Config is audit_logger.typed_config as received; nil when missing.
	// It must not be modified.
	Config *anypb.Any
	// Optional is is_optional: a logger the application lacks is skipped.
	Optional bool
}

// rbacImpl is the RBAC filter, a server-side filter (gRFC A41). Its
// configs are validated wherever they appear, as grpc-go does: an RBAC
// per-route override in a RouteConfiguration shared with servers must be
// valid.
var rbacImpl = &httpFilterImpl{
	parse: func(cfg *anypb.Any, typedStruct bool) (filterConfig, error) {
		m := &v3rbacpb.RBAC{}
		if err := unmarshalFilterConfig(cfg, typedStruct, m); err != nil {
			return filterConfig{}, err
		}
		rules, err := decodeRBACRules(m.GetRules())
		return filterConfig{rbac: rules}, withFieldPrefix("rules", err)
	},
	parseOverride: func(cfg *anypb.Any, typedStruct bool) (filterConfig, error) {
		m := &v3rbacpb.RBACPerRoute{}
		if err := unmarshalFilterConfig(cfg, typedStruct, m); err != nil {
			return filterConfig{}, err
		}
		rules, err := decodeRBACRules(m.GetRbac().GetRules())
		return filterConfig{rbac: rules}, withFieldPrefix("rbac.rules", err)
	},
}

// decodeRBACRules decodes and validates the rules of an RBAC filter
// config or per-route override as gRPC's RBAC engine builds them (gRFC
// A41): no condition or checked_condition, no header matcher on
// ":scheme" or a "grpc-" header, and matchers gRPC can build (CIDR
// ranges, string, header and path matchers). Rules that are absent or
// whose action is LOG are a no-op: they only get the A41 header checks,
// as in grpc-go, and decode to nil. Error fields are relative to the
// rules (envoy.config.rbac.v3.RBAC).
//
// Audit logger configs are not checked: which loggers exist is up to the
// application's registry.
func decodeRBACRules(rules *v3rbacconfigpb.RBAC) (*RBACRules, error) {
	if rules == nil {
		return nil, nil
	}
	names := make([]string, 0, len(rules.GetPolicies()))
	for n := range rules.GetPolicies() {
		names = append(names, n)
	}
	sort.Strings(names)
	engine := rules.GetAction() != v3rbacconfigpb.RBAC_LOG
	if engine && rules.GetAction() != v3rbacconfigpb.RBAC_ALLOW && rules.GetAction() != v3rbacconfigpb.RBAC_DENY {
		return nil, invalid("action", "unsupported action %d", int32(rules.GetAction()))
	}
	out := &RBACRules{Allow: rules.GetAction() == v3rbacconfigpb.RBAC_ALLOW}
	for _, n := range names {
		p := rules.GetPolicies()[n]
		field := "policies[" + strconv.Quote(n) + "]"
		if p.GetCondition() != nil {
			return nil, invalid(field+".condition", "not supported")
		}
		if p.GetCheckedCondition() != nil {
			return nil, invalid(field+".checked_condition", "not supported")
		}
		rp := RBACPolicy{Name: n}
		for i, perm := range p.GetPermissions() {
			m, err := permission(perm, engine, 0)
			if err != nil {
				return nil, withFieldPrefix(indexed(field+".permissions", i), err)
			}
			rp.Permissions = append(rp.Permissions, m)
		}
		for i, pr := range p.GetPrincipals() {
			m, err := principal(pr, engine, 0)
			if err != nil {
				return nil, withFieldPrefix(indexed(field+".principals", i), err)
			}
			rp.Principals = append(rp.Principals, m)
		}
		out.Policies = append(out.Policies, rp)
	}
	if !engine {
		return nil, nil
	}
	if opts := rules.GetAuditLoggingOptions(); opts != nil && opts.GetAuditCondition() != v3rbacconfigpb.RBAC_AuditLoggingOptions_NONE {
		out.Audit = &RBACAudit{Condition: RBACAuditCondition(opts.GetAuditCondition())}
		for _, lc := range opts.GetLoggerConfigs() {
			out.Audit.Loggers = append(out.Audit.Loggers, RBACAuditLogger{Config: lc.GetAuditLogger().GetTypedConfig(), Optional: lc.GetIsOptional()})
		}
	}
	return out, nil
}

// permission decodes one permission; engine is false when only the A41
// header name rules apply (the result is then meaningless). Error fields
// are relative to it.
func permission(p *v3rbacconfigpb.Permission, engine bool, depth int) (RBACMatcher, error) {
	if depth > maxRBACDepth {
		return RBACMatcher{}, invalid("", "rules nested deeper than %d", maxRBACDepth)
	}
	var (
		m   RBACMatcher
		err error
	)
	switch r := p.GetRule().(type) {
	case *v3rbacconfigpb.Permission_AndRules:
		m.Kind = RBACAnd
		for i, q := range r.AndRules.GetRules() {
			sub, err := permission(q, engine, depth+1)
			if err != nil {
				return m, withFieldPrefix(indexed("and_rules.rules", i), err)
			}
			m.Rules = append(m.Rules, sub)
		}
	case *v3rbacconfigpb.Permission_OrRules:
		m.Kind = RBACOr
		for i, q := range r.OrRules.GetRules() {
			sub, err := permission(q, engine, depth+1)
			if err != nil {
				return m, withFieldPrefix(indexed("or_rules.rules", i), err)
			}
			m.Rules = append(m.Rules, sub)
		}
	case *v3rbacconfigpb.Permission_NotRule:
		sub, err := permission(r.NotRule, engine, depth+1)
		if err != nil {
			return m, withFieldPrefix("not_rule", err)
		}
		m.Kind, m.Rules = RBACNot, []RBACMatcher{sub}
	case *v3rbacconfigpb.Permission_Header:
		m.Kind = RBACHeader
		m.Header, err = rbacHeader(r.Header, engine)
		err = withFieldPrefix("header", err)
	case *v3rbacconfigpb.Permission_Any:
		m.Kind = RBACAny
	case *v3rbacconfigpb.Permission_DestinationPort:
		m.Kind, m.Port = RBACDestinationPort, r.DestinationPort
	case *v3rbacconfigpb.Permission_Metadata:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC reads metadata (as never matching)
		m.Kind, m.Invert = RBACMetadata, r.Metadata.GetInvert()
	case *v3rbacconfigpb.Permission_UrlPath:
		m.Kind = RBACURLPath
		if engine {
			m.String, err = rbacString("url_path.path", r.UrlPath.GetPath())
		}
	case *v3rbacconfigpb.Permission_DestinationIp:
		m.Kind = RBACDestinationIP
		if engine {
			m.CIDR, err = rbacCIDR(r.DestinationIp)
			err = withFieldPrefix("destination_ip", err)
		}
	case *v3rbacconfigpb.Permission_RequestedServerName:
		m.Kind = RBACRequestedServerName
		if engine {
			m.String, err = rbacString("requested_server_name", r.RequestedServerName)
		}
	default:
		if engine {
			err = invalid("", "unsupported permission rule %s", oneofName(p.ProtoReflect(), "rule"))
		}
	}
	return m, err
}

// principal decodes one principal; see permission.
func principal(p *v3rbacconfigpb.Principal, engine bool, depth int) (RBACMatcher, error) {
	if depth > maxRBACDepth {
		return RBACMatcher{}, invalid("", "identifiers nested deeper than %d", maxRBACDepth)
	}
	var (
		m   RBACMatcher
		err error
	)
	switch id := p.GetIdentifier().(type) {
	case *v3rbacconfigpb.Principal_AndIds:
		m.Kind = RBACAnd
		for i, q := range id.AndIds.GetIds() {
			sub, err := principal(q, engine, depth+1)
			if err != nil {
				return m, withFieldPrefix(indexed("and_ids.ids", i), err)
			}
			m.Rules = append(m.Rules, sub)
		}
	case *v3rbacconfigpb.Principal_OrIds:
		m.Kind = RBACOr
		for i, q := range id.OrIds.GetIds() {
			sub, err := principal(q, engine, depth+1)
			if err != nil {
				return m, withFieldPrefix(indexed("or_ids.ids", i), err)
			}
			m.Rules = append(m.Rules, sub)
		}
	case *v3rbacconfigpb.Principal_NotId:
		sub, err := principal(id.NotId, engine, depth+1)
		if err != nil {
			return m, withFieldPrefix("not_id", err)
		}
		m.Kind, m.Rules = RBACNot, []RBACMatcher{sub}
	case *v3rbacconfigpb.Principal_Header:
		m.Kind = RBACHeader
		m.Header, err = rbacHeader(id.Header, engine)
		err = withFieldPrefix("header", err)
	case *v3rbacconfigpb.Principal_Any:
		m.Kind = RBACAny
	case *v3rbacconfigpb.Principal_Metadata:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC reads metadata (as never matching)
		m.Kind, m.Invert = RBACMetadata, id.Metadata.GetInvert()
	case *v3rbacconfigpb.Principal_Authenticated_:
		m.Kind = RBACAuthenticated
		if engine && id.Authenticated.GetPrincipalName() != nil {
			m.String, err = rbacString("authenticated.principal_name", id.Authenticated.GetPrincipalName())
		}
	case *v3rbacconfigpb.Principal_UrlPath:
		m.Kind = RBACURLPath
		if engine {
			m.String, err = rbacString("url_path.path", id.UrlPath.GetPath())
		}
	case *v3rbacconfigpb.Principal_DirectRemoteIp:
		m.Kind = RBACDirectRemoteIP
		if engine {
			m.CIDR, err = rbacCIDR(id.DirectRemoteIp)
			err = withFieldPrefix("direct_remote_ip", err)
		}
	case *v3rbacconfigpb.Principal_SourceIp:
		m.Kind = RBACDirectRemoteIP
		if engine {
			//lint:ignore SA1019 gRFC A41: gRPC RBAC still reads the deprecated source_ip (as direct_remote_ip)
			m.CIDR, err = rbacCIDR(id.SourceIp)
			err = withFieldPrefix("source_ip", err)
		}
	case *v3rbacconfigpb.Principal_RemoteIp:
		m.Kind = RBACRemoteIP
		if engine {
			m.CIDR, err = rbacCIDR(id.RemoteIp)
			err = withFieldPrefix("remote_ip", err)
		}
	default:
		if engine {
			err = invalid("", "unsupported principal identifier %s", oneofName(p.ProtoReflect(), "identifier"))
		}
	}
	return m, err
}

// rbacString converts the string matcher sm of an RBAC rule, at field.
func rbacString(field string, sm *v3matcherpb.StringMatcher) (*StringMatcher, error) {
	m, err := stringMatcherFromProto(sm)
	if err != nil {
		return nil, withFieldPrefix(field, err)
	}
	return &m, nil
}

// rbacHeader applies gRFC A41's header rules to an RBAC header matcher:
// the name, lowercased, must not be ":scheme" or start with "grpc-";
// with engine, the matcher must be one gRPC can build, which it returns.
func rbacHeader(h *v3routepb.HeaderMatcher, engine bool) (HeaderMatcher, error) {
	name := strings.ToLower(h.GetName())
	if name == ":scheme" {
		return HeaderMatcher{}, invalid("name", "matching on :scheme is not allowed")
	}
	if strings.HasPrefix(name, "grpc-") {
		return HeaderMatcher{}, invalid("name", "matching on a grpc- header (%q) is not allowed", h.GetName())
	}
	if !engine {
		return HeaderMatcher{}, nil
	}
	// As grpc-go's RBAC engine: only regexes and string_match are
	// validated; the deprecated forms are taken as they are (prefix,
	// suffix and contains may be empty).
	var hm HeaderMatcher
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *v3routepb.HeaderMatcher_PrefixMatch:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC accepts the deprecated header match forms
		hm = HeaderMatcher{Kind: HeaderMatchPrefix, Value: s.PrefixMatch}
	case *v3routepb.HeaderMatcher_SuffixMatch:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC accepts the deprecated header match forms
		hm = HeaderMatcher{Kind: HeaderMatchSuffix, Value: s.SuffixMatch}
	case *v3routepb.HeaderMatcher_ContainsMatch:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC accepts the deprecated header match forms
		hm = HeaderMatcher{Kind: HeaderMatchContains, Value: s.ContainsMatch}
	case *v3routepb.HeaderMatcher_SafeRegexMatch, *v3routepb.HeaderMatcher_StringMatch, *v3routepb.HeaderMatcher_ExactMatch,
		*v3routepb.HeaderMatcher_RangeMatch, *v3routepb.HeaderMatcher_PresentMatch:
		var err error
		if hm, err = headerMatcherFromProto(h); err != nil {
			return HeaderMatcher{}, err
		}
	default:
		return HeaderMatcher{}, invalid("", "no supported header match specifier")
	}
	hm.Name, hm.Invert = name, h.GetInvertMatch()
	return hm, nil
}

// rbacCIDR parses a CidrRange as gRPC's RBAC engine does: address_prefix "/"
// prefix_len must be a valid IP prefix.
func rbacCIDR(c *v3corepb.CidrRange) (netip.Prefix, error) {
	s := c.GetAddressPrefix() + "/" + strconv.FormatUint(uint64(c.GetPrefixLen().GetValue()), 10)
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, invalid("", "invalid CIDR range %q: %w", s, err)
	}
	return p.Masked(), nil
}
