// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// ListenerTypeURL is the type URL of LDS resources.
const ListenerTypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"

// ListenerType, a Type[*Listener], is the LDS resource type: client-side
// Listener resources (an api_listener holding an HttpConnectionManager,
// validated by) and server-side ones (no api_listener: the Listener
// of an xDS-enabled gRPC server, validated by, decoded into
// Listener.Server), decoded to *Listener. A SotW response carries every
// subscribed listener. Its name is found without decoding.
// It is a constant: importers cannot reassign it.
const ListenerType BuiltinType[*Listener] = ListenerTypeURL

// listenerConfig describes ListenerType.
var listenerConfig = TypeConfig[*Listener]{
	TypeURL:                    ListenerTypeURL,
	TypeName:                   "Listener",
	AllResourcesRequiredInSotW: true,
	Decode:                     decodeListener,
	NameField:                  1, // name
}

const (
	// hcmTypeURL is the type of api_listener.api_listener.
	hcmTypeURL = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

	hcmField = "api_listener.api_listener"
)

// Listener is a decoded Listener. A client-side Listener (Server nil) is
// how a gRPC client reaches the routes of one target (gRFC A27, A28, A39):
// exactly one of RouteConfigName and InlineRouteConfig is set. A
// server-side Listener (Server set) is what an xDS-enabled gRPC server
// serves on its listening address (gRFC A36): RouteConfigName,
// InlineRouteConfig, HTTPFilters and MaxStreamDuration are then zero, and
// each of its filter chains has its own. A client must not use a
// server-side Listener as its own, nor a server a client-side one (gRPC
// fails the channel, or does not serve). It is immutable once decoded and
// shared by every watcher: do not modify it, its slices or the protos it
// points to.
type Listener struct {
	// Name is the resource name in canonical form.
	Name string
	// Server is the server side of a Listener without api_listener (gRFC
	// A36, R-26); nil for a client-side Listener.
	Server *ServerListener
	// RouteConfigName is rds.route_config_name, as received: the name of
	// the RouteConfig resource to watch. "" when InlineRouteConfig is set.
	RouteConfigName string
	// InlineRouteConfig is the route_config given inline, validated like an
	// RDS resource; nil when RouteConfigName is set.
	InlineRouteConfig *RouteConfig
	// HTTPFilters is the HTTP filter chain in order, never empty; the last
	// filter, and only it, is the router. Optional filters that gRPC
	// clients do not run (unknown types, server-only filters such as RBAC,
	// or no typed_config) are left out.
	HTTPFilters []HTTPFilter
	// MaxStreamDuration is
	// common_http_protocol_options.max_stream_duration, the default
	// deadline of the listener's RPCs; zero means no limit. A route's
	// RouteAction.MaxStreamDuration overrides it.
	MaxStreamDuration time.Duration

	raw rawBytes // the serialized resource as received (the unwrapped Any's value)
}

// Raw returns the resource exactly as received, after removing any
// Resource wrapper: a new Any on each call (type URL
// ListenerTypeURL) with a copy of the bytes.
func (l *Listener) Raw() *anypb.Any { return l.raw.toAny(ListenerTypeURL) }

// HTTPFilter is one filter of the HttpConnectionManager's chain: one the
// gRPC client (or, in a server Listener, the server) runs, with a valid
// config. The filters a client runs are the router
// (envoy.extensions.filters.http.router.v3.Router), fault injection
// (envoy.extensions.filters.http.fault.v3.HTTPFault, gRFC A33), the set of
// a default grpc-go build, and the stateful session filter (gRFC A55);
// a server runs the router and RBAC (gRFC A41).
type HTTPFilter struct {
	// Name is the filter instance name, non-empty and unique in the chain;
	// typed_per_filter_config entries of the RouteConfig refer to it.
	Name string
	// TypeURL is the type of the filter's config, which says what filter
	// it is, for example
	// "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault".
	TypeURL string
	// Config is typed_config as received; it decodes as the message
	// TypeURL names. It may share memory with the bytes the Listener was
	// decoded from, which the client caches: it must not be modified.
	Config *anypb.Any
	// Optional is is_optional.
	Optional bool

	// The config of a filter this package decodes, decoded: at most one
	// is set, by TypeURL. A data path reads these, never Config.

	// Fault is the config of a fault injection filter (gRFC A33); nil for
	// other filters.
	Fault *HTTPFault
	// RBAC is the rules of an RBAC filter (a server's, gRFC A41); nil for
	// other filters, and for an RBAC filter that enforces nothing (rules
	// absent, or of action LOG).
	RBAC *RBACRules
	// Session is the session state of a stateful session filter (gRFC
	// A55); nil for other filters, and for one that keeps no session (no
	// session_state).
	Session *CookieSession
	// GCPAuthnCacheSize is the cache size of a GCP authentication filter
	// (gRFC A83: cache_config.cache_size, 10 when unset, never 0); 0 for
	// other filters.
	GCPAuthnCacheSize uint64
}

// decodeListener decodes a client-side Listener. The usual
// shape of a client Listener is read straight from the wire (see
// listener_wire.go); anything else goes through proto.Unmarshal. Both
// paths feed listenerFromView, so they accept and reject the same
// resources with the same errors.
func decodeListener(inner *anypb.Any) (string, *Listener, error) {
	var (
		v    hcmView
		w    listenerWire
		fbuf [maxWireFilters]filterView
	)
	if !listenerFromWire(inner.GetValue(), &v, &w) {
		return decodeListenerProto(inner)
	}
	if len(w.name) == 0 {
		return "", nil, errEmptyName("name")
	}
	out, filters, cfgs := newListener(w.nFilters)
	name, fs := w.fill(&v, fbuf[:0], cfgs)
	if err := listenerFromView(name, &v, fs, out, filters); err != nil {
		return name, nil, err
	}
	out.raw = keepRaw(inner.GetValue())
	return name, out, nil
}

// newListener returns a Listener, an empty slice with room for n HTTP
// filters and n Anys for their configs. The three have the same lifetime,
// and for the usual chains of one or two filters they are one allocation.
func newListener(n int) (*Listener, []HTTPFilter, []anypb.Any) {
	if n <= 2 {
		b := new(struct {
			l Listener
			f [2]HTTPFilter
			c [2]anypb.Any
		})
		return &b.l, b.f[:0:n], b.c[:n]
	}
	return new(Listener), make([]HTTPFilter, 0, n), make([]anypb.Any, n)
}

// decodeListenerProto is the proto path of decodeListener, for every
// Listener.
func decodeListenerProto(inner *anypb.Any) (string, *Listener, error) {
	lis := &v3listenerpb.Listener{}
	if err := unmarshalResource(inner, lis, "Listener"); err != nil {
		return "", nil, err
	}
	name := lis.GetName()
	if name == "" {
		return "", nil, errEmptyName("name")
	}
	if lis.GetApiListener() == nil {
		// A Listener without api_listener is a server-side (TCP) listener
		// as in grpc-go.
		out, err := serverListenerFromProto(name, lis)
		if err != nil {
			return name, nil, err
		}
		out.raw = keepRaw(inner.GetValue())
		return name, out, nil
	}
	v, fs, err := hcmViewFromListener(lis)
	if err != nil {
		return name, nil, err
	}
	out := &Listener{}
	if err := listenerFromView(name, v, fs, out, nil); err != nil {
		return name, nil, err
	}
	out.raw = keepRaw(inner.GetValue())
	return name, out, nil
}

// hcmView is what the decoder reads from the HttpConnectionManager of a
// client Listener, whether it comes from a decoded proto or from the
// wire.
type hcmView struct {
	routeSpecifier protowire.Number              // field number of the route_specifier set; 0 if none
	rdsSource      configSourceKind              // rds.config_source
	rdsName        string                        // rds.route_config_name
	routeConfig    *v3routepb.RouteConfiguration // route_config, from the proto path only
	xffHops        uint32                        // xff_num_trusted_hops
	originalIPExt  bool                          // original_ip_detection_extensions not empty
	maxStream      durationParts                 // common_http_protocol_options.max_stream_duration
}

// filterView is one HttpFilter.
type filterView struct {
	name     string
	cfg      *anypb.Any // typed_config; nil when unset
	optional bool       // is_optional
}

// hcmViewFromListener checks the api_listener of lis, which is set, and
// returns the view of its HttpConnectionManager and its http_filters.
func hcmViewFromListener(lis *v3listenerpb.Listener) (*hcmView, []filterView, error) {
	a := lis.GetApiListener().GetApiListener()
	if a.GetTypeUrl() != hcmTypeURL {
		return nil, nil, invalid(hcmField, "type URL %q, want %q", a.GetTypeUrl(), hcmTypeURL)
	}
	hcm := &v3httppb.HttpConnectionManager{}
	if err := proto.Unmarshal(a.GetValue(), hcm); err != nil {
		return nil, nil, invalid(hcmField, "decoding HttpConnectionManager: %w", err)
	}
	v, fs := hcmViewFromProto(hcm)
	return v, fs, nil
}

// hcmViewFromProto returns the view of hcm and its http_filters.
func hcmViewFromProto(hcm *v3httppb.HttpConnectionManager) (*hcmView, []filterView) {
	v := &hcmView{
		xffHops:       hcm.GetXffNumTrustedHops(),
		originalIPExt: len(hcm.GetOriginalIpDetectionExtensions()) != 0,
		maxStream:     durationPartsOf(hcm.GetCommonHttpProtocolOptions().GetMaxStreamDuration()),
	}
	switch rs := hcm.GetRouteSpecifier().(type) {
	case *v3httppb.HttpConnectionManager_Rds:
		v.routeSpecifier = hcmRdsField
		v.rdsSource = configSourceKindOf(rs.Rds.GetConfigSource())
		v.rdsName = rs.Rds.GetRouteConfigName()
	case *v3httppb.HttpConnectionManager_RouteConfig:
		v.routeSpecifier, v.routeConfig = hcmRouteConfigField, rs.RouteConfig
	case *v3httppb.HttpConnectionManager_ScopedRoutes:
		v.routeSpecifier = hcmScopedRoutesField
	}
	var fs []filterView
	if hfs := hcm.GetHttpFilters(); len(hfs) > 0 {
		fs = make([]filterView, len(hfs))
		for i, f := range hfs {
			fs[i] = filterView{name: f.GetName(), cfg: f.GetTypedConfig(), optional: f.GetIsOptional()}
		}
	}
	return v, fs
}

// listenerFromView validates the HttpConnectionManager of a client-side
// Listener named name, with the HTTP filters fs, and converts it
// into out. filters, when not nil, is an empty slice with room for fs, for
// out.HTTPFilters.
func listenerFromView(name string, v *hcmView, fs []filterView, out *Listener, filters []HTTPFilter) error {
	out.Name = CanonicalName(name)
	var err error
	if out.RouteConfigName, out.InlineRouteConfig, err = hcmRoutesFromView(hcmField, v); err != nil {
		return err
	}

	if v.maxStream.set {
		// Deliberately stricter than grpc-go, which uses AsDuration: an
		// invalid or negative duration is malformed.
		d, err := v.maxStream.duration(hcmField + ".common_http_protocol_options.max_stream_duration")
		if err != nil {
			return err
		}
		out.MaxStreamDuration = d
	}

	filters, err = httpFiltersFromView(hcmField+".http_filters", fs, filters, clientSide)
	if err != nil {
		return err
	}
	out.HTTPFilters = filters
	return nil
}

// hcmRoutesFromView applies the rules common to the HttpConnectionManager
// of a client-side and a server-side Listener: gRFC
// A41's xff_num_trusted_hops 0 and no original_ip_detection_extensions,
// and a route specifier that is rds (from ads or self, with a name) or an
// inline route_config, validated as RDS. It returns the RDS name or the
// inline RouteConfig. field is the HttpConnectionManager's path.
func hcmRoutesFromView(field string, v *hcmView) (rdsName string, inline *RouteConfig, err error) {
	// gRFC A41: these must be unset, else NACK.
	if v.xffHops != 0 {
		return "", nil, invalid(field+".xff_num_trusted_hops", "must be 0, got %d", v.xffHops)
	}
	if v.originalIPExt {
		return "", nil, invalid(field+".original_ip_detection_extensions", "must be empty")
	}
	switch v.routeSpecifier {
	case hcmRdsField:
		// field is not a constant: its paths are only built on error.
		if err := checkConfigSourceKind("", v.rdsSource); err != nil {
			return "", nil, withFieldPrefix(field+".rds.config_source", err)
		}
		if v.rdsName == "" {
			return "", nil, invalid(field+".rds.route_config_name", "empty")
		}
		return v.rdsName, nil, nil
	case hcmRouteConfigField:
		rc, err := routeConfigFromProto(v.routeConfig)
		if err != nil {
			return "", nil, withFieldPrefix(field+".route_config", err)
		}
		return "", rc, nil
	case hcmScopedRoutesField:
		return "", nil, invalid(field+".scoped_routes", "not supported, use rds or route_config")
	default:
		return "", nil, invalid(field, "no route specifier, want rds or route_config")
	}
}

// filterSide says which end of gRPC runs an HTTP filter chain.
type filterSide bool

const (
	clientSide filterSide = false
	serverSide filterSide = true
)

func (s filterSide) String() string {
	if s == serverSide {
		return "servers"
	}
	return "clients"
}

// runsOn reports whether side runs the filter impl: clients run the
// filters marked client; servers run the router and RBAC (gRFC A36, A41),
// the server filters of a default grpc-go build.
func (impl *httpFilterImpl) runsOn(side filterSide) bool {
	if side == serverSide {
		return impl == routerImpl || impl == rbacImpl
	}
	return impl.client
}

// httpFiltersFromView validates the HTTP filter chain of a Listener's
// HttpConnectionManager (R-17.1 for a client, R-26.3 for a server; gRFC
// A39) and returns the filters side runs: names non-empty and unique;
// each config resolved through a TypedStruct and valid for a filter gRPC
// knows; an unknown filter, or one side does not run, is an error unless
// is_optional, and then left out; the router last, and only last. Error
// fields are relative to the Listener. out, when not nil, is an empty
// slice with room for fs, which the result uses.
func httpFiltersFromView(field string, fs []filterView, out []HTTPFilter, side filterSide) ([]HTTPFilter, error) {
	if out == nil {
		out = make([]HTTPFilter, 0, len(fs))
	}
	var (
		seen          map[string]bool // for long chains only
		firstTerminal = -1            // index in out of the first terminal filter
		lastTerminal  bool            // whether the last filter of out is terminal
	)
	if len(fs) > 8 {
		seen = make(map[string]bool, len(fs))
	}
	for i, f := range fs {
		name := f.name
		if name == "" {
			return nil, invalid(indexed(field, i)+".name", "empty")
		}
		dup := seen[name]
		if seen == nil {
			for _, g := range fs[:i] {
				dup = dup || g.name == name
			}
		} else {
			seen[name] = true
		}
		if dup {
			return nil, invalid(indexed(field, i)+".name", "duplicate filter name %q", name)
		}
		cfg := f.cfg
		typeURL, typedStruct, err := filterConfigType(cfg)
		if err != nil {
			return nil, withFieldPrefix(indexed(field, i)+".typed_config", err)
		}
		impl := httpFilterFor(typeURL)
		if impl == nil {
			if f.optional {
				continue
			}
			if cfg == nil {
				return nil, invalid(indexed(field, i)+".typed_config", "missing")
			}
			return nil, invalid(indexed(field, i)+".typed_config", "unsupported filter type %q", typeURL)
		}
		// As grpc-go: the config is validated before it is known whether
		// the client runs the filter, so an optional filter with a bad
		// config is still an error.
		fc, err := impl.parse(cfg, typedStruct)
		if err != nil {
			return nil, withFieldPrefix(indexed(field, i)+".typed_config", err)
		}
		if !impl.runsOn(side) {
			if f.optional {
				continue
			}
			return nil, invalid(indexed(field, i), "%s is not supported on %s", describeFilter(name, typeURL), side)
		}
		if impl.terminal && firstTerminal < 0 {
			firstTerminal = len(out)
		}
		lastTerminal = impl.terminal
		out = append(out, HTTPFilter{Name: name, TypeURL: typeURL, Config: cfg, Optional: f.optional, Fault: fc.fault, RBAC: fc.rbac, Session: fc.session, GCPAuthnCacheSize: fc.gcpAuthnCacheSize})
	}
	// index returns the position in fs of a kept filter, for messages;
	// names are unique.
	index := func(name string) int {
		for i, f := range fs {
			if f.name == name {
				return i
			}
		}
		return -1
	}
	if len(out) == 0 {
		return nil, invalid(field, "empty, the last filter must be the router")
	}
	// gRFC A39: a terminal filter anywhere but last, or a non-terminal
	// filter last, is an error.
	if firstTerminal >= 0 && firstTerminal < len(out)-1 {
		f := out[firstTerminal]
		return nil, invalid(indexed(field, index(f.Name)), "terminal filter %q is not the last filter", f.Name)
	}
	if last := out[len(out)-1]; !lastTerminal {
		return nil, invalid(indexed(field, index(last.Name)), "last filter %q (%s) is not a terminal filter such as the router", last.Name, last.TypeURL)
	}
	return out, nil
}
