// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/resolver"

	// The balancers the service configs of this package name. Importing
	// them registers them with grpc (their own init); this package has no
	// init of its own.
	_ "google.golang.org/grpc/balancer/leastrequest"
	_ "google.golang.org/grpc/balancer/pickfirst"
	_ "google.golang.org/grpc/balancer/ringhash"
	_ "google.golang.org/grpc/balancer/roundrobin"
	_ "google.golang.org/grpc/balancer/weightedroundrobin"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/loadreport"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver/internal/router"
)

// NewBuilder returns a grpc resolver.Builder for the targets
// "xds:///name" and "xds://authority/name" (the scheme can be changed with
// WithScheme), whose resolvers watch the xDS configuration of the target
// through c. It is the resolver of DialOptions, which is the way to make
// a channel; use it alone only where dial options cannot be given, for
// example with resolver.Register for channels made by code you do not
// own. Its channels route, balance, retry and eject as DialOptions' do,
// but lack what needs DialOptions' interceptors (route timeouts, fault
// injection, stateful sessions; each logged once per channel, at Warn,
// when the configuration asks for it), and take the application's
// transport credentials (xdscreds.NewClientCredentials for the TLS of
// clusters). Nothing is registered globally:
//
//	cc, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(xdsresolver.NewBuilder(c)), ...)
//
// The Builder does not own c: the caller closes c after closing every
// ClientConn that uses the Builder. A Builder may serve any number of
// ClientConns; each Build starts its own dependency manager, and the
// client shares the watches of the resources they have in common. See the
// package doc. NewBuilder panics if c is nil (programmer error).
func NewBuilder(c *client.Client, opts ...Option) resolver.Builder {
	if c == nil {
		panic("xdsresolver: NewBuilder with a nil client")
	}
	router.Register()
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = c.Logger()
	}
	if o.lrsBuilder == nil {
		// The client's: load reports go on its ADS connection.
		o.lrsBuilder = c.TransportBuilder()
	}
	if o.providers == nil {
		o.providers = xdscreds.NewProviderStore(c.BootstrapConfig().CertificateProviders, xdscreds.WithStoreLogger(o.logger))
	}
	return &builder{
		client:   c,
		opts:     o,
		load:     loadreport.New(o.lrsBuilder, c.BootstrapConfig(), o.logger),
		breakers: &dataplane.Breakers{},
	}
}

// builder implements resolver.Builder. Its fields are set once; load,
// breakers and opts.providers are shared by its resolvers (and safe for
// concurrent use).
type builder struct {
	client   *client.Client
	opts     options
	load     *loadreport.Reporter // the load of its channels, reported per management server
	breakers *dataplane.Breakers  // the circuit breakers of its channels (gRFC A32)
}

// Scheme returns the scheme of the targets b resolves.
func (b *builder) Scheme() string { return b.opts.scheme }

// Build starts resolving target: it maps the target to a Listener name
// (R-5.5, gRFC A47) and starts a dependency manager on it, which selects
// the virtual host for the channel's authority. It returns
// without waiting for any resource. It fails if the target names no
// service, if its authority is not in the bootstrap's authorities (the
// error wraps bootstrap.ErrUnknownAuthority), or if the ring hash header
// option is invalid. It fails with ErrServiceConfigDisabled when the
// channel ignores service configs (grpc.WithDisableServiceConfig): the
// router, which does the per-RPC routing, is named by the service config
// the resolver produces, as with gRPC Go's own xDS resolver. It fails
// with ErrGRPCXDSCredentials on a channel whose transport credentials are
// grpc-go's credentials/xds.
func (b *builder) Build(target resolver.Target, cc resolver.ClientConn, bopts resolver.BuildOptions) (r resolver.Resolver, err error) {
	if h := b.opts.holder; h != nil {
		defer func() {
			if err != nil {
				h.settle() // the interceptors wait no longer
			}
		}()
	}
	t := target.String()
	if bopts.DisableServiceConfig {
		return nil, fmt.Errorf("xdsresolver: target %q: %w", t, ErrServiceConfigDisabled)
	}
	if c, ok := bopts.DialCreds.(interface{ UsesXDS() bool }); ok && c.UsesXDS() {
		return nil, fmt.Errorf("xdsresolver: target %q: %w", t, ErrGRPCXDSCredentials)
	}
	endpoint := target.Endpoint()
	if endpoint == "" {
		return nil, fmt.Errorf("xdsresolver: target %q names no service: want %s:///name or %s://authority/name", t, b.opts.scheme, b.opts.scheme)
	}
	listener, err := b.client.BootstrapConfig().ListenerResourceName(target.URL.Host, endpoint)
	if err != nil {
		return nil, fmt.Errorf("xdsresolver: target %q: %w", t, err)
	}
	hashHeader := b.opts.ringHashHeader
	if hashHeader != "" {
		if err := validateHashHeader(hashHeader); err != nil {
			return nil, fmt.Errorf("xdsresolver: WithRingHashRequestHashHeader: %w", err)
		}
	}
	failSC := cc.ParseServiceConfig(failServiceConfig)
	if failSC.Err != nil {
		// Cannot happen: pick_first is always registered.
		return nil, fmt.Errorf("xdsresolver: grpc rejects the pick_first service config: %w", failSC.Err)
	}
	routerSC := cc.ParseServiceConfig(router.ServiceConfig)
	if routerSC.Err != nil {
		// Cannot happen: NewBuilder registered the router.
		return nil, fmt.Errorf("xdsresolver: grpc rejects the router's service config: %w", routerSC.Err)
	}
	xr := &xdsResolver{
		cc:             cc,
		target:         t,
		ringHashHeader: hashHeader,
		failSC:         failSC,
		routerSC:       routerSC,
		timer:          b.opts.timer,
		holder:         b.opts.holder,
		providers:      b.opts.providers,
		logger:         b.opts.logger.With(xdslog.KeyTarget, t, xdslog.KeyListener, listener),
		started:        make(chan struct{}),
		bootstrap:      b.client.BootstrapConfig(),
	}
	xr.load, xr.breakers = b.load, b.breakers
	xr.load.Acquire()
	authority := dataPlaneAuthority(endpoint, bopts)
	dopts := make([]depmgr.Option, 0, 2+len(b.opts.depmgrOpts))
	dopts = append(dopts, depmgr.WithDataPlaneAuthority(authority), depmgr.WithLogger(b.opts.logger.With(xdslog.KeyTarget, t)))
	dopts = append(dopts, b.opts.depmgrOpts...)
	xr.logger.Debug("starting", xdslog.KeyDataPlaneAuthority, authority)
	xr.manager = depmgr.New(b.client, listener, xr, dopts...)
	close(xr.started)
	return xr, nil
}

// dataPlaneAuthority returns the authority the virtual host is selected
// for: the channel's authority, as gRPC's xDS resolvers use it
// (grpc.WithAuthority, else the transport credentials' server name, else
// the target's endpoint percent-encoded); when grpc did not give it (a
// Build called by hand), the endpoint percent-encoded as grpc encodes a
// channel's default authority.
func dataPlaneAuthority(endpoint string, bopts resolver.BuildOptions) string {
	if bopts.Authority != "" {
		return bopts.Authority
	}
	if strings.HasPrefix(endpoint, ":") {
		return "localhost" + encodeAuthority(endpoint)
	}
	return encodeAuthority(endpoint)
}

// encodeAuthority percent-encodes s as a URI authority (RFC 3986 section
// 3.2), as grpc encodes a channel's default authority: every byte but
// the unreserved characters, the sub-delimiters and ":", "[", "]", "@".
func encodeAuthority(s string) string {
	const hex = "0123456789ABCDEF"
	keep := func(c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~!$&'()*+,;=:[]@", c) >= 0
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !keep(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; keep(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}
