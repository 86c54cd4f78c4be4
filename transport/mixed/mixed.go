// SPDX-License-Identifier: Apache-2.0

package mixed

import (
	"strings"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/file"
	"github.com/proxyless/xds/transport/grpctransport"
	"github.com/proxyless/xds/transport/pertype"
	"github.com/proxyless/xds/transport/rest"
)

// FeaturePerType is the server feature that selects per-type gRPC streams
// (xDS protocol, "Variants of the xDS Transport Protocol", variants 1 and
// 2: SotW, or delta with "delta_ads" or client.WithDelta) instead of ADS
// for a gRPC server entry.
const FeaturePerType = "xds_per_type"

// Option configures a Builder.
type Option func(*options)

type options struct {
	grpc         transport.Dialer // nil: grpctransport.NewBuilder()
	forcePerType bool
	pertypeOpts  []pertype.Option
	fileOpts     []file.Option
	restOpts     []rest.Option
}

// WithGRPC sets the Dialer of the gRPC transports, over which the Builder
// speaks ADS or per-type streams (default grpctransport.NewBuilder()).
func WithGRPC(d transport.Dialer) Option {
	return func(o *options) { o.grpc = d }
}

// WithPerType makes every gRPC server use per-type streams, whatever its
// server features (xdsctl --per-type). WithPerTypeOptions configures them.
func WithPerType() Option {
	return func(o *options) { o.forcePerType = true }
}

// WithPerTypeOptions configures the per-type transports: those of the
// servers that list FeaturePerType, and with WithPerType those of every
// gRPC server.
func WithPerTypeOptions(opts ...pertype.Option) Option {
	return func(o *options) { o.pertypeOpts = append(o.pertypeOpts, opts...) }
}

// WithFileOptions configures the filesystem transports.
func WithFileOptions(opts ...file.Option) Option {
	return func(o *options) { o.fileOpts = append(o.fileOpts, opts...) }
}

// WithRESTOptions configures the REST-JSON transports.
func WithRESTOptions(opts ...rest.Option) Option {
	return func(o *options) { o.restOpts = append(o.restOpts, opts...) }
}

// Builder is a transport.Builder that chooses the transport of each server
// by its server_uri and features (see the package doc). Safe for
// concurrent use.
type Builder struct {
	// Initialized at creation time and read-only afterwards.
	ads          transport.Builder // ADS over the gRPC Dialer
	forcePerType bool
	perType      *pertype.Builder
	file         *file.Builder
	rest         *rest.Builder
}

var _ transport.Builder = (*Builder)(nil)

// NewBuilder returns a Builder configured by opts.
func NewBuilder(opts ...Option) *Builder {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.grpc == nil {
		o.grpc = grpctransport.NewBuilder()
	}
	return &Builder{
		ads:          transport.ADSBuilder(o.grpc),
		forcePerType: o.forcePerType,
		perType:      pertype.NewBuilder(o.grpc, o.pertypeOpts...),
		file:         file.NewBuilder(o.fileOpts...),
		rest:         rest.NewBuilder(o.restOpts...),
	}
}

// Build returns the transport for sc, built with the client's options o
// by the chosen Builder, with its error.
func (m *Builder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	if sc == nil {
		return m.ads.Build(sc, o)
	}
	uri := strings.ToLower(sc.ServerURI)
	switch {
	case strings.HasPrefix(uri, file.Scheme+":"):
		return m.file.Build(sc, o)
	case strings.HasPrefix(uri, "http://"), strings.HasPrefix(uri, "https://"):
		return m.rest.Build(sc, o)
	case m.forcePerType || sc.HasFeature(FeaturePerType):
		return m.perType.Build(sc, o)
	default:
		return m.ads.Build(sc, o)
	}
}
