// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// ListenerTypeURL is the type URL of LDS resources.
const ListenerTypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"

// ListenerType is the LDS resource type: client-side Listener resources
// (an api_listener holding an HttpConnectionManager), decoded to *Listener
// and validated by. A SotW response carries every subscribed
// listener. Its name is found without decoding.
var ListenerType = NewType(TypeConfig[*Listener]{
	TypeURL:                    ListenerTypeURL,
	TypeName:                   "Listener",
	AllResourcesRequiredInSotW: true,
	Decode:                     decodeListener,
	NameField:                  1, // name
})

const (
	// hcmTypeURL is the type of api_listener.api_listener.
	hcmTypeURL = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	// routerTypeURL is the type of the router filter, the only terminal
	// HTTP filter a gRPC client knows (gRFC A39).
	routerTypeURL = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	// The two TypedStruct messages that may wrap a filter config; both have
	// the real type URL in field 1 (type_url).
	xdsTypedStructTypeURL  = "type.googleapis.com/xds.type.v3.TypedStruct"
	udpaTypedStructTypeURL = "type.googleapis.com/udpa.type.v1.TypedStruct"

	hcmField = "api_listener.api_listener"
)

// Listener is a decoded client-side Listener: how a gRPC client reaches the
// routes of one target (gRFC A27, A28, A39). Exactly one of
// RouteConfigName and InlineRouteConfig is set. It is immutable once
// decoded and shared by every watcher: do not modify it, its slices or the
// protos it points to.
type Listener struct {
	// Name is the resource name in canonical form.
	Name string
	// RouteConfigName is rds.route_config_name, as received: the name of
	// the RouteConfig resource to watch. "" when InlineRouteConfig is set.
	RouteConfigName string
	// InlineRouteConfig is the route_config given inline, validated like an
	// RDS resource; nil when RouteConfigName is set.
	InlineRouteConfig *RouteConfig
	// HTTPFilters is the HTTP filter chain in order, never empty; the last
	// filter, and only it, is the router. Optional filters without a
	// typed_config are left out.
	HTTPFilters []HTTPFilter
	// MaxStreamDuration is
	// common_http_protocol_options.max_stream_duration, the default
	// deadline of the listener's RPCs; zero means no limit. A route's
	// RouteAction.MaxStreamDuration overrides it.
	MaxStreamDuration time.Duration

	raw *anypb.Any // the resource as received (unwrapped)
}

// Raw returns the resource exactly as received, after removing any
// Resource wrapper. The caller must not modify it.
func (l *Listener) Raw() *anypb.Any { return l.raw }

// HTTPFilter is one filter of the HttpConnectionManager's chain.
type HTTPFilter struct {
	// Name is the filter instance name, non-empty and unique in the chain.
	Name string
	// TypeURL is the type of the filter's config: typed_config's type URL,
	// or, when typed_config is a TypedStruct (xds.type.v3 or
	// udpa.type.v1), the type URL inside it.
	TypeURL string
	// Config is typed_config as received (possibly a TypedStruct). It must
	// not be modified.
	Config *anypb.Any
	// Optional is is_optional: a client that does not support TypeURL is
	// to skip the filter rather than reject the Listener.
	Optional bool
}

// decodeListener decodes a client-side Listener.
func decodeListener(inner *anypb.Any) (string, *Listener, error) {
	lis := &v3listenerpb.Listener{}
	if err := unmarshalResource(inner, lis, "Listener"); err != nil {
		return "", nil, err
	}
	name := lis.GetName()
	if name == "" {
		return "", nil, errEmptyName("name")
	}
	out, err := listenerFromProto(name, lis)
	if err != nil {
		return name, nil, err
	}
	out.raw = inner
	return name, out, nil
}

func listenerFromProto(name string, lis *v3listenerpb.Listener) (*Listener, error) {
	al := lis.GetApiListener()
	if al == nil {
		return nil, invalid("api_listener", "missing (server-side listeners are not supported)")
	}
	a := al.GetApiListener()
	if a.GetTypeUrl() != hcmTypeURL {
		return nil, invalid(hcmField, "type URL %q, want %q", a.GetTypeUrl(), hcmTypeURL)
	}
	hcm := &v3httppb.HttpConnectionManager{}
	if err := proto.Unmarshal(a.GetValue(), hcm); err != nil {
		return nil, invalid(hcmField, "decoding HttpConnectionManager: %v", err)
	}
	// gRFC A41: these must be unset, else NACK.
	if hcm.GetXffNumTrustedHops() != 0 {
		return nil, invalid(hcmField+".xff_num_trusted_hops", "must be 0, got %d", hcm.GetXffNumTrustedHops())
	}
	if len(hcm.GetOriginalIpDetectionExtensions()) != 0 {
		return nil, invalid(hcmField+".original_ip_detection_extensions", "must be empty")
	}

	out := &Listener{Name: CanonicalName(name)}
	switch rs := hcm.GetRouteSpecifier().(type) {
	case *v3httppb.HttpConnectionManager_Rds:
		if err := checkConfigSource(hcmField+".rds.config_source", rs.Rds.GetConfigSource()); err != nil {
			return nil, err
		}
		if rs.Rds.GetRouteConfigName() == "" {
			return nil, invalid(hcmField+".rds.route_config_name", "empty")
		}
		out.RouteConfigName = rs.Rds.GetRouteConfigName()
	case *v3httppb.HttpConnectionManager_RouteConfig:
		rc, err := routeConfigFromProto(rs.RouteConfig)
		if err != nil {
			return nil, withFieldPrefix(hcmField+".route_config", err)
		}
		out.InlineRouteConfig = rc
	case *v3httppb.HttpConnectionManager_ScopedRoutes:
		return nil, invalid(hcmField+".scoped_routes", "not supported, use rds or route_config")
	default:
		return nil, invalid(hcmField, "no route specifier, want rds or route_config")
	}

	if d := hcm.GetCommonHttpProtocolOptions().GetMaxStreamDuration(); d != nil {
		v, err := duration(hcmField+".common_http_protocol_options.max_stream_duration", d)
		if err != nil {
			return nil, err
		}
		out.MaxStreamDuration = v
	}

	filters, err := httpFiltersFromProto(hcmField+".http_filters", hcm.GetHttpFilters())
	if err != nil {
		return nil, err
	}
	out.HTTPFilters = filters
	return out, nil
}

// httpFiltersFromProto checks the HTTP filter chain (R-17.1, gRFC A39):
// names non-empty and unique, the router last and only last. The config of
// each filter is not validated here.
func httpFiltersFromProto(field string, fs []*v3httppb.HttpFilter) ([]HTTPFilter, error) {
	out := make([]HTTPFilter, 0, len(fs))
	index := make([]int, 0, len(fs)) // index in fs of each filter of out
	seen := make(map[string]bool, len(fs))
	for i, f := range fs {
		name := f.GetName()
		if name == "" {
			return nil, invalid(indexed(field, i)+".name", "empty")
		}
		if seen[name] {
			return nil, invalid(indexed(field, i)+".name", "duplicate filter name %q", name)
		}
		seen[name] = true
		cfg := f.GetTypedConfig()
		if cfg == nil {
			if f.GetIsOptional() {
				continue
			}
			return nil, invalid(indexed(field, i)+".typed_config", "missing")
		}
		typeURL := cfg.GetTypeUrl()
		if typeURL == xdsTypedStructTypeURL || typeURL == udpaTypedStructTypeURL {
			inner, ok := scanStringField(cfg.GetValue(), 1)
			if !ok || inner == "" {
				return nil, invalid(indexed(field, i)+".typed_config", "TypedStruct without a type_url")
			}
			typeURL = inner
		}
		out = append(out, HTTPFilter{Name: name, TypeURL: typeURL, Config: cfg, Optional: f.GetIsOptional()})
		index = append(index, i)
	}
	if len(out) == 0 {
		return nil, invalid(field, "empty, the last filter must be the router")
	}
	// gRFC A39: a terminal filter anywhere but last, or a non-terminal
	// filter last, is an error.
	for k, f := range out[:len(out)-1] {
		if f.TypeURL == routerTypeURL {
			return nil, invalid(indexed(field, index[k]), "router filter %q is not the last filter", f.Name)
		}
	}
	if last := out[len(out)-1]; last.TypeURL != routerTypeURL {
		return nil, invalid(indexed(field, index[len(out)-1]), "last filter %q has type %q, not the router", last.Name, last.TypeURL)
	}
	return out, nil
}
