// SPDX-License-Identifier: Apache-2.0

package pertype

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport"
)

// Type URLs of the built-in resource types.
const (
	listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	routeType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	clusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	endpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
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
		listenerType: svc("listener", "ListenerDiscoveryService", "Listeners"),
		routeType:    svc("route", "RouteDiscoveryService", "Routes"),
		clusterType:  svc("cluster", "ClusterDiscoveryService", "Clusters"),
		endpointType: svc("endpoint", "EndpointDiscoveryService", "Endpoints"),
	}
}

// Option configures Wrap and NewBuilder.
type Option func(*config)

type config struct {
	services map[string]Service // by type URL
}

// WithService sets the per-type service of the resource type typeURL, for
// custom resource types or servers that serve a built-in type
// elsewhere. A later call for the same type URL wins.
func WithService(typeURL string, s Service) Option {
	return func(c *config) { c.services[typeURL] = s }
}

func newConfig(opts []Option) *config {
	c := &config{services: DefaultServices()}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Builder is a transport.Builder whose transports speak per-type streams
// over the transports of another Builder (usually
// grpctransport.NewBuilder()). Safe for concurrent use.
type Builder struct {
	inner transport.Builder
	cfg   *config
}

var _ transport.Builder = (*Builder)(nil)

// NewBuilder returns a Builder that wraps every Transport inner builds
// with Wrap.
func NewBuilder(inner transport.Builder, opts ...Option) *Builder {
	return &Builder{inner: inner, cfg: newConfig(opts)}
}

// Build builds the inner Transport for sc and wraps it. It returns the
// inner Builder's error unchanged.
func (b *Builder) Build(sc *bootstrap.ServerConfig) (transport.Transport, error) {
	tr, err := b.inner.Build(sc)
	if err != nil {
		return nil, err
	}
	return &Transport{inner: tr, cfg: b.cfg}, nil
}

// Wrap returns a Transport that opens per-type streams on tr in place of
// ADS streams (see the package doc). Closing it closes tr.
func Wrap(tr transport.Transport, opts ...Option) *Transport {
	return &Transport{inner: tr, cfg: newConfig(opts)}
}

// Transport is a transport.Transport that turns ADS streams into per-type
// streams on the Transport it wraps. Safe for concurrent use.
type Transport struct {
	inner transport.Transport
	cfg   *config
}

var _ transport.Transport = (*Transport)(nil)

// NewStream returns a mux stream for transport.ADSMethod (SotW, variant 1)
// or transport.DeltaADSMethod (delta, variant 2), without network I/O: the
// stream of each type is opened on the first request of the type. Any
// other method is opened on the wrapped Transport unchanged. The mux
// stream ends when ctx is done or a type's stream fails before the mux
// received anything (see the package doc).
func (t *Transport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	var delta bool
	switch method {
	case transport.ADSMethod:
	case transport.DeltaADSMethod:
		delta = true
	default:
		return t.inner.NewStream(ctx, method)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	m := &muxStream{
		ctx:      mctx,
		cancel:   cancel,
		tr:       t.inner,
		services: maps.Clone(t.cfg.services),
		recvCh:   make(chan []byte),
		failed:   make(chan struct{}),
		subs:     make(map[string]*subStream),
	}
	m.delta = delta
	return m, nil
}

// Close closes the wrapped Transport, which ends every stream.
func (t *Transport) Close() { t.inner.Close() }

// errNoService is wrapped by the error of a type with no per-type service.
var errNoService = errors.New("no per-type service for the resource type")

// methodFor returns the per-type method of typeURL.
func (m *muxStream) methodFor(typeURL string) (string, error) {
	s, ok := m.services[typeURL]
	method := s.Stream
	if m.delta {
		method = s.Delta
	}
	if !ok || method == "" {
		return "", fmt.Errorf("pertype: %w %q (set one with pertype.WithService)", errNoService, typeURL)
	}
	return method, nil
}
