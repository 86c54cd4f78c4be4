// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"bytes"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// ServerListener is the server side of a Listener, one without
// api_listener: what an xDS-enabled gRPC server serves on its listening
// address (gRFC A36, R-26). Each accepted connection gets the filter chain
// whose filter_chain_match matches it most specifically, or the default
// filter chain when none does; a connection that gets neither is closed.
// It is immutable, like the Listener that holds it.
type ServerListener struct {
	// Address is address.socket_address.address as received: the IP the
	// server must listen on ("0.0.0.0", "::", a pod IP), never empty.
	Address string
	// Port is address.socket_address.port_value; 0 matches any listening
	// port, as in grpc-go.
	Port uint32
	// FilterChains are filter_chains in order, those that can never match
	// included (FilterChainMatch.Unsupported says which); no two of them
	// have overlapping matches.
	FilterChains []FilterChain
	// DefaultFilterChain is default_filter_chain, nil when absent: the
	// chain of the connections no filter chain matches. Its
	// filter_chain_match is ignored (Match is zero).
	DefaultFilterChain *FilterChain
}

// FilterChain is one filter chain of a server-side Listener: the TLS of a
// connection and the HttpConnectionManager of its RPCs (gRFC A36). Exactly
// one of RouteConfigName and InlineRouteConfig is set.
type FilterChain struct {
	// Name is the filter chain's name, possibly empty.
	Name string
	// Match is filter_chain_match, normalized.
	Match FilterChainMatch
	// Security is the TLS configuration of transport_socket, nil when
	// there is none: the connection then uses the server's fallback
	// credentials (gRFC A29).
	Security *ServerSecurityConfig
	// RouteConfigName is the HttpConnectionManager's
	// rds.route_config_name; "" when InlineRouteConfig is set.
	RouteConfigName string
	// InlineRouteConfig is its inline route_config, validated like an RDS
	// resource; nil when RouteConfigName is set.
	InlineRouteConfig *RouteConfig
	// HTTPFilters is its HTTP filter chain in order, never empty, the
	// router last: the filters a gRPC server runs (RBAC and the router);
	// optional ones it does not run are left out.
	HTTPFilters []HTTPFilter

	key []byte // the deterministic serialization of the chain, for SameConfig
}

// SameConfig reports whether fc and o were decoded from equal FilterChain
// messages (compared by their deterministic serialization, which includes
// the filter chain match, the TLS context and the HttpConnectionManager
// as received): a server keeps the connections of a filter chain that an
// updated Listener keeps unchanged. Nil equals only nil.
func (fc *FilterChain) SameConfig(o *FilterChain) bool {
	if fc == nil || o == nil {
		return fc == o
	}
	return bytes.Equal(fc.key, o.key)
}

// listenerTypeWith returns ListenerType, or, when o checks certificate
// provider instances, a Listener type whose server-side Listeners must
// name instances of the bootstrap in their filter chains' TLS contexts, as
// in gRPC.
func listenerTypeWith(o decodeOptions) Type[*Listener] {
	if o.certProviders == nil {
		return ListenerType
	}
	cfg := listenerConfig
	instances := o.certProviders
	cfg.Decode = func(inner *anypb.Any) (string, *Listener, error) {
		name, l, err := decodeListener(inner)
		if err != nil || l.Server == nil {
			return name, l, err
		}
		for i := range l.Server.FilterChains {
			if err := checkServerCertificateProviders(l.Server.FilterChains[i].Security, instances); err != nil {
				return name, nil, withFieldPrefix(indexed("filter_chains", i), err)
			}
		}
		if err := checkServerCertificateProviders(l.Server.DefaultFilterChain.security(), instances); err != nil {
			return name, nil, withFieldPrefix("default_filter_chain", err)
		}
		return name, l, nil
	}
	return newTypeImpl(cfg)
}

func (fc *FilterChain) security() *ServerSecurityConfig {
	if fc == nil {
		return nil
	}
	return fc.Security
}

// serverListenerFromProto validates a server-side Listener named name
// (R-26.1 to, gRFC A36) and returns it decoded; error fields are
// relative to the Listener.
func serverListenerFromProto(name string, lis *v3listenerpb.Listener) (*Listener, error) {
	if n := len(lis.GetListenerFilters()); n != 0 {
		return nil, invalid("listener_filters", "%d entries; a gRPC server supports none (gRFC A36)", n)
	}
	if lis.GetUseOriginalDst().GetValue() {
		return nil, invalid("use_original_dst", "true is not supported (gRFC A36)")
	}
	sl := &ServerListener{}
	sa := lis.GetAddress().GetSocketAddress()
	switch {
	case lis.GetAddress() == nil:
		return nil, invalid("address", "missing: a server-side Listener needs the address it serves (and a client-side one needs api_listener)")
	case sa == nil:
		return nil, invalid("address", "not a socket_address")
	case sa.GetProtocol() != v3corepb.SocketAddress_TCP:
		return nil, invalid("address.socket_address.protocol", "%s, want TCP", sa.GetProtocol())
	case sa.GetAddress() == "":
		return nil, invalid("address.socket_address.address", "empty")
	case sa.GetNamedPort() != "":
		return nil, invalid("address.socket_address.named_port", "not supported, use port_value")
	}
	sl.Address, sl.Port = sa.GetAddress(), sa.GetPortValue()

	fcs := lis.GetFilterChains()
	if len(fcs) > 0 {
		sl.FilterChains = make([]FilterChain, len(fcs))
	}
	canMatch := false
	for i, fc := range fcs {
		field := indexed("filter_chains", i)
		if err := filterChainFromProto(fc, &sl.FilterChains[i], true); err != nil {
			return nil, withFieldPrefix(field, err)
		}
		m := &sl.FilterChains[i].Match
		canMatch = canMatch || m.Unsupported() == ""
		for j := range i {
			if m.overlaps(&sl.FilterChains[j].Match) {
				return nil, invalid(field+".filter_chain_match", "overlaps the match of filter_chains[%d]: a connection could match both (gRFC A36)", j)
			}
		}
	}
	if dfc := lis.GetDefaultFilterChain(); dfc != nil {
		sl.DefaultFilterChain = &FilterChain{}
		if err := filterChainFromProto(dfc, sl.DefaultFilterChain, false); err != nil {
			return nil, withFieldPrefix("default_filter_chain", err)
		}
	}
	if !canMatch && sl.DefaultFilterChain == nil {
		// As grpc-go: a Listener that serves no connection is invalid.
		return nil, invalid("filter_chains", "no filter chain can match a connection and there is no default_filter_chain")
	}
	return &Listener{Name: CanonicalName(name), Server: sl}, nil
}

// filterChainFromProto validates one filter chain into
// out; withMatch is false for default_filter_chain, whose
// filter_chain_match is ignored. Error fields are relative to the chain.
func filterChainFromProto(fc *v3listenerpb.FilterChain, out *FilterChain, withMatch bool) error {
	out.Name = fc.GetName()
	if withMatch {
		if err := filterChainMatchFromProto(fc.GetFilterChainMatch(), &out.Match); err != nil {
			return withFieldPrefix("filter_chain_match", err)
		}
	}
	if err := networkFiltersFromProto(fc.GetFilters(), out); err != nil {
		return err
	}
	sc, err := serverSecurityFromProto(fc.GetTransportSocket())
	if err != nil {
		return withFieldPrefix("transport_socket", err)
	}
	out.Security = sc
	// The chain was decoded from the Listener's bytes: it marshals again.
	out.key, _ = proto.MarshalOptions{Deterministic: true}.Marshal(fc)
	return nil
}

// networkFiltersFromProto validates the network filters of a filter chain
// (gRFC A36): names non-empty and unique, each a typed_config, exactly one
// HttpConnectionManager and it last; gRPC supports no other network
// filter, so the list holds the HttpConnectionManager only. Error fields
// are relative to the chain.
func networkFiltersFromProto(fs []*v3listenerpb.Filter, out *FilterChain) error {
	if len(fs) == 0 {
		return invalid("filters", "empty, want an HttpConnectionManager")
	}
	for i, f := range fs {
		if f.GetName() == "" {
			return invalid(indexed("filters", i)+".name", "empty")
		}
		for _, g := range fs[:i] {
			if g.GetName() == f.GetName() {
				return invalid(indexed("filters", i)+".name", "duplicate filter name %q", f.GetName())
			}
		}
	}
	for i, f := range fs {
		field := indexed("filters", i)
		tc, ok := f.GetConfigType().(*v3listenerpb.Filter_TypedConfig)
		if !ok {
			return invalid(field, "no typed_config (config_discovery is not supported)")
		}
		if typeURL := tc.TypedConfig.GetTypeUrl(); typeURL != hcmTypeURL {
			return invalid(field+".typed_config", "unsupported network filter type %q; a gRPC server supports %q only (gRFC A36)", typeURL, hcmTypeURL)
		}
		if i != len(fs)-1 {
			return invalid(field, "an HttpConnectionManager must be the only and last network filter (gRFC A36)")
		}
		hcm := &v3httppb.HttpConnectionManager{}
		if err := proto.Unmarshal(tc.TypedConfig.GetValue(), hcm); err != nil {
			return invalid(field+".typed_config", "decoding HttpConnectionManager: %w", err)
		}
		if err := serverHCMFromProto(field+".typed_config", hcm, out); err != nil {
			return err
		}
	}
	return nil
}

// serverHCMFromProto validates the HttpConnectionManager of a filter chain
// into out; field is its path, relative to the chain.
func serverHCMFromProto(field string, hcm *v3httppb.HttpConnectionManager, out *FilterChain) error {
	v, fs := hcmViewFromProto(hcm)
	var err error
	if out.RouteConfigName, out.InlineRouteConfig, err = hcmRoutesFromView(field, v); err != nil {
		return err
	}
	// max_stream_duration bounds a client's RPCs: a server ignores it.
	out.HTTPFilters, err = httpFiltersFromView(field+".http_filters", fs, nil, serverSide)
	return err
}
