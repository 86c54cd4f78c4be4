// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"math"

	"google.golang.org/protobuf/proto"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3upstreamhttppb "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// What an HTTP data plane reads of a Cluster beyond what gRPC uses
// (R-17.7, docs/http.md): the upstream HTTP protocol, the retry circuit
// breaker and the panic threshold. The gRPC path ignores them.

// UpstreamHTTPProtocol is the HTTP protocol a Cluster's connections
// speak (envoy.extensions.upstreams.http.v3.HttpProtocolOptions).
type UpstreamHTTPProtocol uint8

// The upstream HTTP protocols. The zero value is HTTP/1.1, Envoy's
// default.
const (
	// UpstreamHTTP1 is HTTP/1.1: no protocol options, or
	// explicit_http_config.http_protocol_options.
	UpstreamHTTP1 UpstreamHTTPProtocol = iota
	// UpstreamHTTP2 is HTTP/2: explicit_http_config.http2_protocol_options,
	// or the deprecated Cluster.http2_protocol_options.
	UpstreamHTTP2
	// UpstreamHTTPAuto is HTTP/2 or HTTP/1.1 by ALPN: auto_config,
	// use_downstream_protocol_config, or the deprecated
	// protocol_selection USE_DOWNSTREAM_PROTOCOL.
	UpstreamHTTPAuto
	// UpstreamHTTP3 is explicit_http_config.http3_protocol_options.
	UpstreamHTTP3
)

// String returns "HTTP/1.1", "HTTP/2", "auto" or "HTTP/3".
func (p UpstreamHTTPProtocol) String() string {
	switch p {
	case UpstreamHTTP2:
		return "HTTP/2"
	case UpstreamHTTPAuto:
		return "auto"
	case UpstreamHTTP3:
		return "HTTP/3"
	default:
		return "HTTP/1.1"
	}
}

const (
	// httpProtocolOptionsKey is the typed_extension_protocol_options key
	// of the upstream HTTP protocol options.
	httpProtocolOptionsKey     = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	httpProtocolOptionsTypeURL = "type.googleapis.com/" + httpProtocolOptionsKey

	defaultMaxRetries            = 3  // circuit breaking, Envoy's default
	defaultHealthyPanicThreshold = 50 // percent, Envoy's default
)

// upstreamProtocol returns the upstream HTTP protocol of c; error fields
// are relative to the Cluster.
func upstreamProtocol(c *v3clusterpb.Cluster) (UpstreamHTTPProtocol, error) {
	if a := c.GetTypedExtensionProtocolOptions()[httpProtocolOptionsKey]; a != nil {
		field := "typed_extension_protocol_options[" + httpProtocolOptionsKey + "]"
		if a.GetTypeUrl() != httpProtocolOptionsTypeURL {
			return 0, invalid(field, "type URL %q, want %q", a.GetTypeUrl(), httpProtocolOptionsTypeURL)
		}
		m := &v3upstreamhttppb.HttpProtocolOptions{}
		if err := proto.Unmarshal(a.GetValue(), m); err != nil {
			return 0, invalid(field, "decoding HttpProtocolOptions: %w", err)
		}
		switch pc := m.GetUpstreamProtocolOptions().(type) {
		case *v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig_:
			switch pc.ExplicitHttpConfig.GetProtocolConfig().(type) {
			case *v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions:
				return UpstreamHTTP2, nil
			case *v3upstreamhttppb.HttpProtocolOptions_ExplicitHttpConfig_Http3ProtocolOptions:
				return UpstreamHTTP3, nil
			}
			return UpstreamHTTP1, nil
		case *v3upstreamhttppb.HttpProtocolOptions_UseDownstreamProtocolConfig, *v3upstreamhttppb.HttpProtocolOptions_AutoConfig:
			return UpstreamHTTPAuto, nil
		}
		return UpstreamHTTP1, nil
	}
	//lint:ignore SA1019 Envoy still reads the deprecated protocol fields when the typed options are absent.
	if c.GetHttp2ProtocolOptions() != nil {
		return UpstreamHTTP2, nil
	}
	//lint:ignore SA1019 Envoy still reads the deprecated protocol fields when the typed options are absent.
	if c.GetProtocolSelection() == v3clusterpb.Cluster_USE_DOWNSTREAM_PROTOCOL {
		return UpstreamHTTPAuto, nil
	}
	return UpstreamHTTP1, nil
}

// healthyPanicThreshold returns common_lb_config.healthy_panic_threshold
// in whole percent (rounded up, so that a threshold above 0 stays one),
// 50 when unset, clamped to [0, 100].
func healthyPanicThreshold(c *v3clusterpb.Cluster) uint8 {
	p := c.GetCommonLbConfig().GetHealthyPanicThreshold()
	if p == nil {
		return defaultHealthyPanicThreshold
	}
	v := p.GetValue()
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v >= 100:
		return 100
	}
	return uint8(math.Ceil(v))
}
