// SPDX-License-Identifier: Apache-2.0

// Package mixed picks the transport of each management server from its
// bootstrap entry, so that one client can take resources from several
// kinds of sources at once (a Listener from a file, endpoints from a
// management server): the cache, the dependency manager (package depmgr)
// and the resolver work unchanged on every source.
//
//	c, err := client.New(cfg, client.WithTransportBuilder(mixed.NewBuilder()))
//
// By server_uri:
//
//   - "file:///path": a filesystem subscription (package transport/file).
//   - "http://…" or "https://…": REST-JSON polling (package transport/rest).
//   - anything else: gRPC (package transport/grpctransport), with ADS; with
//     per-type streams (package transport/pertype) when the entry lists the
//     server feature "xds_per_type" (FeaturePerType) or the Builder was made
//     WithPerType.
//
// The file and REST entries need no `channel_creds` (bootstrap.Parse
// accepts them without, R-1.3): neither transport uses channel
// credentials.
//
// Which server serves a resource is the bootstrap's business, as always:
// old-style names go to the top-level xds_servers, xdstp names to their
// authority's (gRFC A47). A file or REST source speaks SotW only: with
// client.WithDelta or "delta_ads", its watchers get the transport's
// ErrDeltaUnsupported.
//
// Caveat: "xds_per_type" is not one of the features that make two server
// entries different servers (bootstrap.ServerConfig.Key), so two entries
// with the same server_uri and credentials, one with it and one without,
// share the channel built for the first one used.
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
	grpc         transport.Builder // nil: grpctransport.NewBuilder()
	forcePerType bool
	pertypeOpts  []pertype.Option
	fileOpts     []file.Option
	restOpts     []rest.Option
}

// WithGRPC sets the Builder of gRPC transports (default
// grpctransport.NewBuilder()).
func WithGRPC(b transport.Builder) Option {
	return func(o *options) { o.grpc = b }
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
	grpc         transport.Builder
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
		grpc:         o.grpc,
		forcePerType: o.forcePerType,
		perType:      pertype.NewBuilder(o.grpc, o.pertypeOpts...),
		file:         file.NewBuilder(o.fileOpts...),
		rest:         rest.NewBuilder(o.restOpts...),
	}
}

// Build returns the transport for sc, with the error of the chosen
// Builder.
func (m *Builder) Build(sc *bootstrap.ServerConfig) (transport.Transport, error) {
	if sc == nil {
		return m.grpc.Build(sc)
	}
	uri := strings.ToLower(sc.ServerURI)
	switch {
	case strings.HasPrefix(uri, file.Scheme+":"):
		return m.file.Build(sc)
	case strings.HasPrefix(uri, "http://"), strings.HasPrefix(uri, "https://"):
		return m.rest.Build(sc)
	case m.forcePerType || sc.HasFeature(FeaturePerType):
		return m.perType.Build(sc)
	default:
		return m.grpc.Build(sc)
	}
}
