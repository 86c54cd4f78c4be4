// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"context"
	"encoding/base64"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// Header rewriting (see the package doc, "Header rewriting"), with
// DialOptions: request_headers_to_add / _to_remove of the RPC's weighted
// cluster, route, virtual host and RouteConfiguration become the RPC's
// outgoing metadata, applied by the interceptors with the module's one
// engine (dataplane.ApplyRequestMutations, Envoy's semantics). Each level
// is adapted to gRPC once per configuration (grpcHeaderMutations): what
// gRPC reserves or cannot send is left out, with a warning once per
// channel (warnHeaders), and the values of "-bin" keys are decoded from
// base64, since Envoy's are what goes on the wire, where gRPC sends
// binary metadata in base64.

// grpcHeaderMutations is dataplane.Options.HeaderMutations for gRPC: the
// request mutations of m that gRPC can apply, with the values of "-bin"
// keys decoded; nil when none is left. Response mutations are left out:
// a gRPC client does not apply them.
func grpcHeaderMutations(m *resources.HeaderMutations) *resources.HeaderMutations {
	usable := true
	for _, n := range m.RequestHeadersToRemove {
		usable = usable && grpcRefusal(n, "", false) == ""
	}
	for _, o := range m.RequestHeadersToAdd {
		usable = usable && grpcRefusal(o.Name, o.Value, true) == "" && !strings.HasSuffix(o.Name, "-bin")
	}
	switch {
	case len(m.RequestHeadersToAdd) == 0 && len(m.RequestHeadersToRemove) == 0:
		return nil
	case usable && len(m.ResponseHeadersToAdd) == 0 && len(m.ResponseHeadersToRemove) == 0:
		return m
	}
	out := &resources.HeaderMutations{}
	for _, n := range m.RequestHeadersToRemove {
		if grpcRefusal(n, "", false) == "" {
			out.RequestHeadersToRemove = append(out.RequestHeadersToRemove, n)
		}
	}
	for _, o := range m.RequestHeadersToAdd {
		if grpcRefusal(o.Name, o.Value, true) != "" {
			continue
		}
		if strings.HasSuffix(o.Name, "-bin") {
			b, _ := decodeBin(o.Value) // grpcRefusal checked it
			o.Value = string(b)
		}
		out.RequestHeadersToAdd = append(out.RequestHeadersToAdd, o)
	}
	if len(out.RequestHeadersToAdd) == 0 && len(out.RequestHeadersToRemove) == 0 {
		return nil
	}
	return out
}

// grpcRefusal says why the gRPC path does not apply a request header
// mutation of the header name (adding value when adding); "" when it
// does. gRPC reserves the keys starting with "grpc-" (package metadata),
// and sets content-type, user-agent and te itself (grpc-go drops them
// from metadata); metadata keys are [0-9a-z-_.]; the values of other
// keys than "-bin" ones printable ASCII (grpc-go fails an RPC whose
// metadata breaks these); "-bin" values are base64, as on the wire.
// Pseudo-headers and host never get here: package resources rejects them.
func grpcRefusal(name, value string, adding bool) string {
	switch {
	case strings.HasPrefix(name, "grpc-"):
		return "keys starting with grpc- are reserved for gRPC"
	case name == "content-type" || name == "user-agent" || name == "te":
		return "gRPC sets this header itself"
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return "not a gRPC metadata key: only 0-9 a-z - _ . are allowed"
		}
	}
	switch {
	case !adding:
	case strings.HasSuffix(name, "-bin"):
		if _, err := decodeBin(value); err != nil {
			return "the value of a -bin key must be base64"
		}
	default:
		for i := 0; i < len(value); i++ {
			if value[i] < 0x20 || value[i] > 0x7e {
				return "gRPC metadata values must be printable ASCII (or the key end in -bin)"
			}
		}
	}
	return ""
}

// decodeBin decodes the value of a "-bin" header as gRPC does: base64,
// padded or not.
func decodeBin(v string) ([]byte, error) {
	if len(v)%4 == 0 {
		return base64.StdEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}

// withHeaderMutations returns ctx whose outgoing metadata are its own
// with the request mutations of levels applied; the caller's metadata
// are not changed.
func withHeaderMutations(ctx context.Context, levels []*resources.HeaderMutations) context.Context {
	md, ok := metadata.FromOutgoingContext(ctx) // a copy
	if !ok {
		md = metadata.MD{}
	}
	dataplane.ApplyRequestMutations(levels, mdHeaders(md))
	return metadata.NewOutgoingContext(ctx, md)
}

// mdHeaders is gRPC metadata as a dataplane.HeaderSet; its keys are
// lowercase, as metadata.FromOutgoingContext makes them.
type mdHeaders metadata.MD

func (m mdHeaders) Values(name string) []string { return m[name] }
func (m mdHeaders) Set(name, value string)      { m[name] = []string{value} }
func (m mdHeaders) Add(name, value string)      { m[name] = append(m[name], value) }
func (m mdHeaders) Del(name string)             { delete(m, name) }

// warnHeaders logs, once per channel each, the header mutations of the
// configuration (its RouteConfiguration rc, its data-plane configuration
// dp) that the channel does not apply: all of them without DialOptions;
// the response mutations; the request ones gRPC refuses (grpcRefusal).
func (r *xdsResolver) warnHeaders(rc *resources.RouteConfig, dp *dataplane.Config) {
	type level struct {
		where string
		m     *resources.HeaderMutations
	}
	var levels []level
	if rc != nil && rc.HeaderMutations != nil {
		levels = append(levels, level{"route configuration " + rc.Name, rc.HeaderMutations})
	}
	if dp.VirtualHost.HeaderMutations != nil {
		levels = append(levels, level{"virtual host " + dp.VirtualHost.Name, dp.VirtualHost.HeaderMutations})
	}
	for i := range dp.Routes {
		rt := &dp.Routes[i]
		if rt.Res.HeaderMutations != nil {
			levels = append(levels, level{rt.Desc, rt.Res.HeaderMutations})
		}
		for _, wc := range rt.Res.Action.WeightedClusters {
			if wc.HeaderMutations != nil {
				levels = append(levels, level{rt.Desc + ", weighted cluster " + wc.Name, wc.HeaderMutations})
			}
		}
	}
	for _, l := range levels {
		m := l.m
		if len(m.ResponseHeadersToAdd) > 0 || len(m.ResponseHeadersToRemove) > 0 {
			r.warnOnce("response-headers", "response_headers_to_add and response_headers_to_remove are not applied by a gRPC client; ignored", xdslog.KeyRoute, l.where)
		}
		if len(m.RequestHeadersToAdd) == 0 && len(m.RequestHeadersToRemove) == 0 {
			continue
		}
		if r.holder == nil {
			r.warnOnce("request-headers", "request_headers_to_add and request_headers_to_remove need xdsresolver.DialOptions; ignored", xdslog.KeyRoute, l.where)
			continue
		}
		for _, n := range m.RequestHeadersToRemove {
			if why := grpcRefusal(n, "", false); why != "" {
				r.warnOnce("header-refused:"+n, "a request header to remove is left alone: "+why, xdslog.KeyRoute, l.where, xdslog.KeyHeader, n)
			}
		}
		for _, o := range m.RequestHeadersToAdd {
			if why := grpcRefusal(o.Name, o.Value, true); why != "" {
				r.warnOnce("header-refused:"+o.Name, "a request header to add is left out: "+why, xdslog.KeyRoute, l.where, xdslog.KeyHeader, o.Name)
			}
		}
	}
}
