// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"context"
	"log/slog"
	"net"
	"time"
)

// DefaultDNSRefreshInterval is how often the host of a LOGICAL_DNS cluster
// is resolved again when WithDNSRefreshInterval is not given.
const DefaultDNSRefreshInterval = 30 * time.Second

// DNSResolver resolves the hosts of LOGICAL_DNS clusters. *net.Resolver
// implements it. LookupHost returns the addresses (IP literals) of host,
// or an error; it must return soon after ctx is done, which happens when
// the cluster goes away or the Manager is closed. It is called from a
// goroutine per host, possibly concurrently for different hosts.
type DNSResolver interface {
	LookupHost(ctx context.Context, host string) (addrs []string, err error)
}

// Option configures a Manager.
type Option func(*options)

type options struct {
	authority   string
	httpRoutes  bool
	dnsResolver DNSResolver
	dnsRefresh  time.Duration
	logger      *slog.Logger
}

func defaultOptions() options {
	return options{
		dnsResolver: net.DefaultResolver,
		dnsRefresh:  DefaultDNSRefreshInterval,
	}
}

// WithDataPlaneAuthority sets the authority the virtual host is selected
// for. The default is the Listener name. A gRPC resolver passes
// its channel's authority (R-5.5: by default the target's path,
// percent-encoded), which differs from the Listener name when a listener
// name template applies.
func WithDataPlaneAuthority(authority string) Option {
	return func(o *options) { o.authority = authority }
}

// WithHTTPRoutes makes the Manager follow the clusters of the routes an
// HTTP data plane uses (resources.VirtualHost.RoutesForHTTP: with the
// routes gRPC leaves out, those matching query parameters, R-17.7)
// instead of gRPC's, so that they hold publication back as the others
// do. The net/http data path of package xdshttp sets it.
func WithHTTPRoutes() Option {
	return func(o *options) { o.httpRoutes = true }
}

// WithDNSResolver sets the resolver of the hosts of LOGICAL_DNS clusters.
// The default is net.DefaultResolver. nil means the default.
func WithDNSResolver(r DNSResolver) Option {
	return func(o *options) {
		if r != nil {
			o.dnsResolver = r
		}
	}
}

// WithDNSRefreshInterval sets how long after a successful lookup the host
// of a LOGICAL_DNS cluster is resolved again; it also caps the delay
// between retries of failed lookups. Zero or negative means
// DefaultDNSRefreshInterval (30 s).
func WithDNSRefreshInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.dnsRefresh = d
		}
	}
}

// WithLogger sets the logger. The default is the client's
// (client.Client.Logger), which discards everything unless the client was
// given one. Whole-config
// errors, and cluster, endpoint and DNS errors, are logged at Warn;
// ambient errors at Info; watches started and cancelled at Debug.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}
