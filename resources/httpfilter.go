// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"

	v1udpatypepb "github.com/cncf/xds/go/udpa/type/v1"
	v3xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
)

// The HTTP filters a gRPC client knows (gRFC A39), with the type URLs of
// their configs. They are the filters a default grpc-go build registers
// (google.golang.org/grpc/xds imports router, fault and rbac; ext_proc and
// ext_authz are behind environment variables that default to off), the
// stateful session filter (statefulsession.go) and the GCP
// authentication filter (gcpauthn.go), which grpc-go reads only with
// GRPC_EXPERIMENTAL_XDS_GCP_AUTHENTICATION_FILTER.
const (
	routerTypeURL       = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	faultTypeURL        = "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
	rbacTypeURL         = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
	rbacPerRouteTypeURL = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute"

	// filterConfigTypeURL wraps a per-route override to mark it optional.
	filterConfigTypeURL = "type.googleapis.com/envoy.config.route.v3.FilterConfig"
)

// httpFilterImpl is what this package knows of one HTTP filter type: how
// to validate and decode its configs and where it may be used.
type httpFilterImpl struct {
	// terminal filters must be last in the chain, and only they (A39).
	terminal bool
	// client reports whether gRPC clients run the filter. A client-side
	// Listener with a filter that clients do not run is rejected unless the
	// filter is optional.
	client bool
	// parse validates and decodes the config of the filter in a Listener;
	// cfg is typed_config as received. A config inside a TypedStruct
	// (typedStruct true) is rejected by every built-in filter: they need
	// the proto.
	parse func(cfg *anypb.Any, typedStruct bool) (filterConfig, error)
	// parseOverride validates and decodes a typed_per_filter_config entry
	//
	parseOverride func(cfg *anypb.Any, typedStruct bool) (filterConfig, error)
}

// filterConfig is a filter config decoded: at most one field is set, the
// one of the filter's type (HTTPFilter and FilterOverride carry them).
type filterConfig struct {
	fault             *HTTPFault
	rbac              *RBACRules
	session           *CookieSession
	gcpAuthnCacheSize uint64
}

// routerImpl is the router, the terminal filter. The fault filter is in
// fault.go, RBAC in rbac.go, the stateful session filter in
// statefulsession.go.
var routerImpl = &httpFilterImpl{
	terminal: true,
	client:   true,
	parse: func(cfg *anypb.Any, typedStruct bool) (filterConfig, error) {
		return filterConfig{}, checkFilterConfig(cfg, typedStruct, routerDesc, routerPlan)
	},
	parseOverride: func(*anypb.Any, bool) (filterConfig, error) {
		// grpc-go's router rejects any override.
		return filterConfig{}, invalid("", "the router filter takes no per-route override")
	},
}

// httpFilterFor returns the filter whose configs have type typeURL, nil if
// gRPC clients do not know it. A switch rather than a map: the type URLs
// differ in length, so that a lookup is one comparison, which matters on
// the path of every Listener.
func httpFilterFor(typeURL string) *httpFilterImpl {
	switch typeURL {
	case routerTypeURL:
		return routerImpl
	case faultTypeURL:
		return faultImpl // fault.go
	case rbacTypeURL, rbacPerRouteTypeURL:
		return rbacImpl // rbac.go
	case statefulSessionTypeURL, statefulSessionPerRouteTypeURL:
		return statefulSessionImpl // statefulsession.go
	case gcpAuthnTypeURL:
		return gcpAuthnImpl // gcpauthn.go
	}
	return nil
}

var (
	routerDesc = (*v3routerpb.Router)(nil).ProtoReflect().Descriptor()
	routerPlan = sync.OnceValue(func() *wirePlan { return planFor(routerDesc) })
)

// unmarshalFilterConfig decodes cfg into m, which must be the message
// cfg's type URL names; error fields are relative to the config.
func unmarshalFilterConfig(cfg *anypb.Any, typedStruct bool, m proto.Message) error {
	name := m.ProtoReflect().Descriptor().FullName()
	if typedStruct {
		return invalid("", "a %s config must be given as the message, not in a TypedStruct", name)
	}
	if !anyIs(cfg.GetTypeUrl(), name) {
		return invalid("", "type URL %q, want %s", cfg.GetTypeUrl(), name)
	}
	if err := proto.Unmarshal(cfg.GetValue(), m); err != nil {
		return invalid("", "decoding %s: %w", name, err)
	}
	return nil
}

// checkFilterConfig checks that cfg is a valid serialized message of type
// md, whose wire plan is plan, without keeping it; error fields are
// relative to the config.
func checkFilterConfig(cfg *anypb.Any, typedStruct bool, md protoreflect.MessageDescriptor, plan func() *wirePlan) error {
	if typedStruct {
		return invalid("", "a %s config must be given as the message, not in a TypedStruct", md.FullName())
	}
	if !anyIs(cfg.GetTypeUrl(), md.FullName()) {
		return invalid("", "type URL %q, want %s", cfg.GetTypeUrl(), md.FullName())
	}
	if plan().check(cfg.GetValue(), wireRecursionLimit) == nil {
		return nil
	}
	// Invalid or not checkable: proto.Unmarshal decides, with its error.
	if err := proto.Unmarshal(cfg.GetValue(), newMessage(md)); err != nil {
		return invalid("", "decoding %s: %w", md.FullName(), err)
	}
	return nil
}

// newMessage returns an empty message of type md: the generated type when
// it is registered, as it is for every type this package names.
func newMessage(md protoreflect.MessageDescriptor) proto.Message {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		return mt.New().Interface()
	}
	return dynamicpb.NewMessage(md)
}

// anyIs reports whether typeURL names the message name, as
// anypb.Any.MessageIs does: the part after the last '/' must equal it.
func anyIs(typeURL string, name protoreflect.FullName) bool {
	n := len(name)
	return len(typeURL) >= n && typeURL[len(typeURL)-n:] == string(name) &&
		(len(typeURL) == n || typeURL[len(typeURL)-n-1] == '/')
}

// filterConfigType returns the type URL of an HTTP filter config: the
// type URL of cfg, or, when cfg is a TypedStruct (xds.type.v3 or
// udpa.type.v1), the type URL inside it. typedStruct reports
// the latter. Error fields are relative to cfg.
func filterConfigType(cfg *anypb.Any) (typeURL string, typedStruct bool, err error) {
	typeURL = cfg.GetTypeUrl()
	if httpFilterFor(typeURL) != nil {
		return typeURL, false, nil // a known filter's own config, the usual case
	}
	var ts interface{ GetTypeUrl() string }
	switch {
	case anyIs(typeURL, "xds.type.v3.TypedStruct"):
		ts = &v3xdstypepb.TypedStruct{}
	case anyIs(typeURL, "udpa.type.v1.TypedStruct"):
		ts = &v1udpatypepb.TypedStruct{}
	default:
		return typeURL, false, nil
	}
	m := ts.(proto.Message)
	if err := proto.Unmarshal(cfg.GetValue(), m); err != nil {
		return "", false, invalid("", "decoding TypedStruct: %w", err)
	}
	return ts.GetTypeUrl(), true, nil
}

// FilterOverride is one entry of a typed_per_filter_config map: the config
// that replaces, for one virtual host, route or weighted cluster, the
// config of the HTTP filter of the same name in the Listener (gRFC A39).
// Entries for optional filters this package does not know are left out.
// The override of a filter this package decodes is held decoded too: at
// most one of Fault, RBAC and Session is set, by TypeURL.
type FilterOverride struct {
	// TypeURL is the type of the config, after removing a FilterConfig
	// wrapper and resolving a TypedStruct.
	TypeURL string
	// Config is the config as received, inside any FilterConfig wrapper.
	// It must not be modified.
	Config *anypb.Any
	// Fault is the override of a fault injection filter (TypeURL
	// HTTPFault, gRFC A33) decoded; nil for other types.
	Fault *HTTPFault
	// RBAC is the rules of an RBAC override (TypeURL RBACPerRoute, gRFC
	// A41) decoded; nil for other types, and for an override that
	// enforces nothing (no rbac: the filter is off for the route; or
	// rules that are absent or of action LOG).
	RBAC *RBACRules
	// Session is the session state of a stateful session override
	// (TypeURL StatefulSessionPerRoute, gRFC A55) decoded; nil for other
	// types, and for an override that keeps no session (disabled, or no
	// session_state).
	Session *CookieSession
}

// filterOverridesFromProto validates a typed_per_filter_config map (R-17.3,
// gRFC A39): each entry, possibly wrapped in a FilterConfig that may mark
// it optional, must be a valid override of a filter gRPC knows; an unknown
// optional one is dropped. Error fields are relative to the map. Entries
// are checked in sorted key order so that the error reported for a map
// with several bad entries does not depend on map iteration.
func filterOverridesFromProto(cfgs map[string]*anypb.Any) (map[string]FilterOverride, error) {
	if len(cfgs) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(cfgs))
	for k := range cfgs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]FilterOverride, len(cfgs))
	for _, name := range keys {
		cfg := cfgs[name]
		field := "[" + name + "]"
		optional := false
		if anyIs(cfg.GetTypeUrl(), "envoy.config.route.v3.FilterConfig") {
			fc := &v3routepb.FilterConfig{}
			if err := proto.Unmarshal(cfg.GetValue(), fc); err != nil {
				return nil, invalid(field, "decoding FilterConfig: %w", err)
			}
			// FilterConfig.disabled is ignored: grpc-go reads it only with
			// ext_proc or ext_authz enabled, both off by default.
			cfg, optional = fc.GetConfig(), fc.GetIsOptional()
			field += ".config"
		}
		typeURL, typedStruct, err := filterConfigType(cfg)
		if err != nil {
			return nil, withFieldPrefix(field, err)
		}
		impl := httpFilterFor(typeURL)
		if impl == nil {
			if optional {
				continue
			}
			return nil, invalid(field, "unsupported filter config type %q", typeURL)
		}
		fc, err := impl.parseOverride(cfg, typedStruct)
		if err != nil {
			return nil, withFieldPrefix(field, err)
		}
		out[name] = FilterOverride{TypeURL: typeURL, Config: cfg, Fault: fc.fault, RBAC: fc.rbac, Session: fc.session}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// describeFilter names a filter in messages.
func describeFilter(name, typeURL string) string {
	return fmt.Sprintf("filter %q of type %q", name, typeURL)
}
