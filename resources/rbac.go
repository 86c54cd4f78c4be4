// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"net/netip"
	"sort"
	"strconv"
	"strings"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// maxRBACDepth bounds the nesting of and/or/not rules this package walks,
// so that a hostile config cannot exhaust the stack. Protobuf decoding
// already limits nesting to 10,000 messages; gRPC has no lower limit, and
// no real policy comes close.
const maxRBACDepth = 100

// checkRBACRules validates the rules of an RBAC filter config or per-route
// override as gRPC's RBAC engine would build them (gRFC A41): no
// condition or checked_condition, no header matcher on ":scheme" or a
// "grpc-" header, and matchers gRPC can build (CIDR ranges, string,
// header and path matchers). Rules that are absent or whose action is LOG
// are a no-op and only get the A41 checks, as in grpc-go. Error fields are
// relative to the rules (envoy.config.rbac.v3.RBAC).
//
// Audit logger configs are not checked: which loggers exist is up to the
// application's registry.
func checkRBACRules(rules *v3rbacconfigpb.RBAC) error {
	if rules == nil {
		return nil
	}
	names := make([]string, 0, len(rules.GetPolicies()))
	for n := range rules.GetPolicies() {
		names = append(names, n)
	}
	sort.Strings(names)
	engine := rules.GetAction() != v3rbacconfigpb.RBAC_LOG
	if engine && rules.GetAction() != v3rbacconfigpb.RBAC_ALLOW && rules.GetAction() != v3rbacconfigpb.RBAC_DENY {
		return invalid("action", "unsupported action %d", int32(rules.GetAction()))
	}
	for _, n := range names {
		p := rules.GetPolicies()[n]
		field := "policies[" + strconv.Quote(n) + "]"
		if p.GetCondition() != nil {
			return invalid(field+".condition", "not supported")
		}
		if p.GetCheckedCondition() != nil {
			return invalid(field+".checked_condition", "not supported")
		}
		for i, perm := range p.GetPermissions() {
			if err := checkPermission(perm, engine, 0); err != nil {
				return withFieldPrefix(indexed(field+".permissions", i), err)
			}
		}
		for i, pr := range p.GetPrincipals() {
			if err := checkPrincipal(pr, engine, 0); err != nil {
				return withFieldPrefix(indexed(field+".principals", i), err)
			}
		}
	}
	return nil
}

// checkPermission validates one permission; engine is false when only the
// A41 header name rules apply. Error fields are relative to it.
func checkPermission(p *v3rbacconfigpb.Permission, engine bool, depth int) error {
	if depth > maxRBACDepth {
		return invalid("", "rules nested deeper than %d", maxRBACDepth)
	}
	switch r := p.GetRule().(type) {
	case *v3rbacconfigpb.Permission_AndRules:
		for i, q := range r.AndRules.GetRules() {
			if err := checkPermission(q, engine, depth+1); err != nil {
				return withFieldPrefix(indexed("and_rules.rules", i), err)
			}
		}
	case *v3rbacconfigpb.Permission_OrRules:
		for i, q := range r.OrRules.GetRules() {
			if err := checkPermission(q, engine, depth+1); err != nil {
				return withFieldPrefix(indexed("or_rules.rules", i), err)
			}
		}
	case *v3rbacconfigpb.Permission_NotRule:
		if err := checkPermission(r.NotRule, engine, depth+1); err != nil {
			return withFieldPrefix("not_rule", err)
		}
	case *v3rbacconfigpb.Permission_Header:
		return withFieldPrefix("header", checkRBACHeader(r.Header, engine))
	case *v3rbacconfigpb.Permission_Any, *v3rbacconfigpb.Permission_DestinationPort, *v3rbacconfigpb.Permission_Metadata:
	case *v3rbacconfigpb.Permission_UrlPath:
		if engine {
			if _, err := stringMatcherFromProto(r.UrlPath.GetPath()); err != nil {
				return withFieldPrefix("url_path.path", err)
			}
		}
	case *v3rbacconfigpb.Permission_DestinationIp:
		if engine {
			return withFieldPrefix("destination_ip", checkCIDR(r.DestinationIp))
		}
	case *v3rbacconfigpb.Permission_RequestedServerName:
		if engine {
			if _, err := stringMatcherFromProto(r.RequestedServerName); err != nil {
				return withFieldPrefix("requested_server_name", err)
			}
		}
	default:
		if engine {
			return invalid("", "unsupported permission rule %s", oneofName(p.ProtoReflect(), "rule"))
		}
	}
	return nil
}

// checkPrincipal validates one principal; see checkPermission.
func checkPrincipal(p *v3rbacconfigpb.Principal, engine bool, depth int) error {
	if depth > maxRBACDepth {
		return invalid("", "identifiers nested deeper than %d", maxRBACDepth)
	}
	switch id := p.GetIdentifier().(type) {
	case *v3rbacconfigpb.Principal_AndIds:
		for i, q := range id.AndIds.GetIds() {
			if err := checkPrincipal(q, engine, depth+1); err != nil {
				return withFieldPrefix(indexed("and_ids.ids", i), err)
			}
		}
	case *v3rbacconfigpb.Principal_OrIds:
		for i, q := range id.OrIds.GetIds() {
			if err := checkPrincipal(q, engine, depth+1); err != nil {
				return withFieldPrefix(indexed("or_ids.ids", i), err)
			}
		}
	case *v3rbacconfigpb.Principal_NotId:
		if err := checkPrincipal(id.NotId, engine, depth+1); err != nil {
			return withFieldPrefix("not_id", err)
		}
	case *v3rbacconfigpb.Principal_Header:
		return withFieldPrefix("header", checkRBACHeader(id.Header, engine))
	case *v3rbacconfigpb.Principal_Any, *v3rbacconfigpb.Principal_Metadata:
	case *v3rbacconfigpb.Principal_Authenticated_:
		if engine && id.Authenticated.GetPrincipalName() != nil {
			if _, err := stringMatcherFromProto(id.Authenticated.GetPrincipalName()); err != nil {
				return withFieldPrefix("authenticated.principal_name", err)
			}
		}
	case *v3rbacconfigpb.Principal_UrlPath:
		if engine {
			if _, err := stringMatcherFromProto(id.UrlPath.GetPath()); err != nil {
				return withFieldPrefix("url_path.path", err)
			}
		}
	case *v3rbacconfigpb.Principal_DirectRemoteIp:
		if engine {
			return withFieldPrefix("direct_remote_ip", checkCIDR(id.DirectRemoteIp))
		}
	case *v3rbacconfigpb.Principal_SourceIp:
		if engine {
			//lint:ignore SA1019 gRFC A41: gRPC RBAC still reads the deprecated source_ip (as direct_remote_ip)
			return withFieldPrefix("source_ip", checkCIDR(id.SourceIp))
		}
	case *v3rbacconfigpb.Principal_RemoteIp:
		if engine {
			return withFieldPrefix("remote_ip", checkCIDR(id.RemoteIp))
		}
	default:
		if engine {
			return invalid("", "unsupported principal identifier %s", oneofName(p.ProtoReflect(), "identifier"))
		}
	}
	return nil
}

// checkRBACHeader applies gRFC A41's header rules to an RBAC header
// matcher: the name, lowercased, must not be ":scheme" or start with
// "grpc-"; with engine, the matcher must be one gRPC can build.
func checkRBACHeader(h *v3routepb.HeaderMatcher, engine bool) error {
	name := strings.ToLower(h.GetName())
	if name == ":scheme" {
		return invalid("name", "matching on :scheme is not allowed")
	}
	if strings.HasPrefix(name, "grpc-") {
		return invalid("name", "matching on a grpc- header (%q) is not allowed", h.GetName())
	}
	if !engine {
		return nil
	}
	// As grpc-go's RBAC engine: only regexes and string_match are
	// validated; the deprecated forms are taken as they are.
	switch hm := h.GetHeaderMatchSpecifier().(type) {
	case *v3routepb.HeaderMatcher_SafeRegexMatch:
		//lint:ignore SA1019 gRFC A41: gRPC RBAC accepts the deprecated header match forms
		if _, err := safeRegexFromProto(hm.SafeRegexMatch); err != nil {
			return withFieldPrefix("safe_regex_match", err)
		}
	case *v3routepb.HeaderMatcher_StringMatch:
		if _, err := stringMatcherFromProto(hm.StringMatch); err != nil {
			return withFieldPrefix("string_match", err)
		}
	case *v3routepb.HeaderMatcher_ExactMatch, *v3routepb.HeaderMatcher_RangeMatch, *v3routepb.HeaderMatcher_PresentMatch,
		*v3routepb.HeaderMatcher_PrefixMatch, *v3routepb.HeaderMatcher_SuffixMatch, *v3routepb.HeaderMatcher_ContainsMatch:
	default:
		return invalid("", "no supported header match specifier")
	}
	return nil
}

// checkCIDR checks that a CidrRange parses as gRPC's RBAC engine parses
// it: address_prefix "/" prefix_len must be a valid IP prefix.
func checkCIDR(c *v3corepb.CidrRange) error {
	s := c.GetAddressPrefix() + "/" + strconv.FormatUint(uint64(c.GetPrefixLen().GetValue()), 10)
	if _, err := netip.ParsePrefix(s); err != nil {
		return invalid("", "invalid CIDR range %q: %w", s, err)
	}
	return nil
}
