// SPDX-License-Identifier: Apache-2.0

package pertype

import (
	"context"
	"errors"
	"fmt"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"
)

// Service names the two per-type streaming RPCs of one resource type, as
// full gRPC method names ("/package.Service/Method").
type Service struct {
	// Stream is the SotW method (variant 1), e.g.
	// "/envoy.service.listener.v3.ListenerDiscoveryService/StreamListeners".
	Stream string
	// Delta is the incremental method (variant 2), e.g.
	// "/envoy.service.listener.v3.ListenerDiscoveryService/DeltaListeners".
	Delta string
}

// DefaultServices returns the per-type services of the built-in types, by
// type URL: ListenerDiscoveryService (StreamListeners, DeltaListeners),
// RouteDiscoveryService (StreamRoutes, DeltaRoutes),
// ClusterDiscoveryService (StreamClusters, DeltaClusters) and
// EndpointDiscoveryService (StreamEndpoints, DeltaEndpoints), all in
// envoy.service.*.v3. The map is new: the caller may modify it.
func DefaultServices() map[string]Service {
	svc := func(pkg, service, suffix string) Service {
		prefix := "/envoy.service." + pkg + ".v3." + service + "/"
		return Service{Stream: prefix + "Stream" + suffix, Delta: prefix + "Delta" + suffix}
	}
	return map[string]Service{
		resources.ListenerTypeURL:    svc("listener", "ListenerDiscoveryService", "Listeners"),
		resources.RouteConfigTypeURL: svc("route", "RouteDiscoveryService", "Routes"),
		resources.ClusterTypeURL:     svc("cluster", "ClusterDiscoveryService", "Clusters"),
		resources.EndpointsTypeURL:   svc("endpoint", "EndpointDiscoveryService", "Endpoints"),
	}
}

// Option configures Wrap and NewBuilder.
type Option func(*options)

type options struct {
	services map[string]Service // by type URL
}

// WithService sets the per-type service of the resource type typeURL, for
// custom resource types or servers that serve a built-in type
// elsewhere. A later call for the same type URL wins.
func WithService(typeURL string, s Service) Option {
	return func(c *options) { c.services[typeURL] = s }
}

func newOptions(opts []Option) *options {
	c := &options{services: DefaultServices()}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Builder is a transport.Builder whose transports speak per-type streams
// over the Transports of a transport.Dialer (usually
// grpctransport.NewBuilder()). Safe for concurrent use.
type Builder struct {
	inner transport.Dialer
	cfg   *options
}

var _ transport.Builder = (*Builder)(nil)

// NewBuilder returns a Builder that wraps every Transport inner dials
// with Wrap.
func NewBuilder(inner transport.Dialer, opts ...Option) *Builder {
	return &Builder{inner: inner, cfg: newOptions(opts)}
}

// Build dials the inner Transport for sc, with the client's options o,
// and wraps it. It returns the inner Dialer's error unchanged.
func (b *Builder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	tr, err := b.inner.Dial(sc, o)
	if err != nil {
		return nil, err
	}
	return wrap(tr, b.cfg), nil
}

// Wrap returns the transport that opens per-type streams on tr in place
// of ADS streams (see the package doc). Closing it closes tr.
func Wrap(tr transport.Transport, opts ...Option) *Transport {
	return wrap(tr, newOptions(opts))
}

func wrap(tr transport.Transport, cfg *options) *Transport {
	return &Transport{xds: transport.PerTypeStreams(tr, cfg.methodFor)}
}

// Transport is a transport.XDS whose xDS streams are per-type streams on
// the Transport it wraps. Safe for concurrent use.
type Transport struct {
	xds transport.XDS // transport.PerTypeStreams of the wrapped Transport
}

var _ transport.XDS = (*Transport)(nil)

// PerType reports true: one stream per resource type.
func (t *Transport) PerType() bool { return true }

// NewXDSStream opens the per-type stream of spec.TypeURL on the wrapped
// Transport, with the type's service (the Stream method for SotW, the
// Delta one for delta). It fails for a type with no service, naming it.
func (t *Transport) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	return t.xds.NewXDSStream(ctx, spec)
}

// StreamName names the stream by its service and method:
// "ClusterDiscoveryService.StreamClusters stream".
func (t *Transport) StreamName(spec transport.StreamSpec) string { return t.xds.StreamName(spec) }

// NewLRSStream opens the load reporting stream on the wrapped Transport.
func (t *Transport) NewLRSStream(ctx context.Context) (transport.Stream, error) {
	return t.xds.NewLRSStream(ctx)
}

// Close closes the wrapped Transport, which ends every stream.
func (t *Transport) Close() { t.xds.Close() }

// errNoService is wrapped by the error of a type with no per-type service.
var errNoService = errors.New("no per-type service for the resource type")

// methodFor returns the per-type method of typeURL: the Stream method for
// SotW (variant 1), the Delta one for delta (variant 2).
func (c *options) methodFor(typeURL string, delta bool) (string, error) {
	s, ok := c.services[typeURL]
	method := s.Stream
	if delta {
		method = s.Delta
	}
	if !ok || method == "" {
		return "", fmt.Errorf("pertype: %w %q (set one with pertype.WithService)", errNoService, typeURL)
	}
	return method, nil
}
