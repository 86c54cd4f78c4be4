// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/loadreport"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/watcher"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver/internal/router"
	"github.com/proxyless/xds/xdsresolver/internal/rpcretry"
)

// failServiceConfig is the service config pushed, with no endpoint, when
// the configuration is unusable: pick_first, which then fails RPCs with
// the error reported next (see xdsResolver.fail).
const failServiceConfig = `{"loadBalancingConfig":[{"pick_first":{}}]}`

var _ watcher.Watcher[*depmgr.XDSConfig] = (*xdsResolver)(nil)

// xdsResolver is the resolver of one ClientConn's target. It is the
// watcher (watcher.Watcher[*depmgr.XDSConfig]) of its Manager: the
// Manager calls ResourceChanged, ResourceError and AmbientError serially
// on its own goroutine, and every call to cc is made from there, so cc's
// calls are ordered; after manager.Close returns none is made. Each
// method calls done when it returns: the channel has taken the state in,
// and the Manager may deliver the next one (depmgr's package doc,
// "Delivery").
type xdsResolver struct {
	// Initialized at creation time and read-only afterwards. manager is
	// set by Build before it returns, and used only by ResolveNow and
	// Close, which grpc calls after Build returned.
	cc             resolver.ClientConn
	target         string                     // the target, for messages
	ringHashHeader string                     // the request hash header of ring_hash without route hash policies
	failSC         *serviceconfig.ParseResult // failServiceConfig, parsed
	routerSC       *serviceconfig.ParseResult // routerServiceConfig, parsed
	logger         *slog.Logger
	manager        *depmgr.Manager
	started        chan struct{}     // closed once manager is set
	bootstrap      *bootstrap.Config // the client's, for trusted_xds_server

	timer    router.TimerFunc     // the router's timers; nil for time.AfterFunc
	load     *loadreport.Reporter // the Builder's; set by Build
	breakers *dataplane.Breakers  // the Builder's; set by Build
	holder   *channelHolder       // DialOptions' interceptors' configuration; nil without them
	// providers are the certificate providers of clusters with a
	// transport socket (the Builder's).
	providers *xdscreds.ProviderStore
	warned    map[string]bool // what warnUnsupported logged; manager goroutine only
	version   uint64          // configurations pushed; used on the manager's goroutine only
	// scJSON and sc are the last service config with method configs
	// (retry policies) and its parse; manager goroutine only.
	scJSON string
	sc     *serviceconfig.ParseResult
}

// trusted reports whether the RouteConfiguration of cfg (or its Listener,
// for an inline one) comes from management servers that all list
// trusted_xds_server (gRFC A81, R-2.3): the servers of the authority of
// its name, the top-level ones for a name that is not xdstp. A route's
// auto_host_rewrite is honoured only then.
func (r *xdsResolver) trusted(cfg *depmgr.XDSConfig) bool {
	name := cfg.RouteConfig.Name
	if cfg.Listener.InlineRouteConfig == cfg.RouteConfig {
		name = cfg.Listener.Name
	}
	servers := r.bootstrap.Servers
	if n, err := resources.ParseName(name); err == nil {
		var serr error
		if servers, serr = r.bootstrap.ServersForAuthority(n.Authority); serr != nil {
			return false
		}
	}
	for _, s := range servers {
		if !s.TrustedXDSServer() {
			return false
		}
	}
	return len(servers) > 0
}

// gcpFilters returns the GCP authentication filters of l (gRFC A83), in
// chain order; nil for none.
func gcpFilters(l *resources.Listener) []resources.HTTPFilter {
	if l == nil {
		return nil
	}
	var out []resources.HTTPFilter
	for _, f := range l.HTTPFilters {
		if f.GCPAuthnCacheSize > 0 {
			out = append(out, f)
		}
	}
	return out
}

// subscribe subscribes to cluster for an RLS target (depmgr's dynamic
// subscriptions): the configurations then have it until cancel.
func (r *xdsResolver) subscribe(cluster string) (cancel func()) {
	<-r.started // manager is set by Build, which the manager may deliver to before it returns
	return r.manager.SubscribeToCluster(cluster)
}

// ResolveNow asks for the hosts of LOGICAL_DNS clusters to be resolved
// again; EDS endpoints come when the management server sends them.
func (r *xdsResolver) ResolveNow(resolver.ResolveNowOptions) {
	r.manager.ResolveNow()
}

// Close cancels every watch of the resolver and waits until it makes no
// more calls to the ClientConn.
func (r *xdsResolver) Close() {
	r.manager.Close()
	r.load.Release()
	r.logger.Debug("closed")
}

// ResourceChanged turns a complete configuration into a State for the
// channel: the router's service config, and the configuration
// (router.Config) in its attributes; or fails the channel when the
// configuration cannot be used (see the package doc, "Errors").
func (r *xdsResolver) ResourceChanged(cfg *depmgr.XDSConfig, done func()) {
	defer done()
	rc, err := buildConfig(dataplane.SnapshotOf(cfg), r.ringHashHeader, r.providers)
	if err != nil {
		r.fail(err)
		return
	}
	r.version++
	rc.Version, rc.Timer, rc.Load, rc.Breakers = r.version, r.timer, r.load.Store(), r.breakers
	rc.Intercepted = r.holder != nil
	rc.AuthorityRewrite = r.trusted(cfg)
	if len(rc.Plugins) > 0 {
		rc.Subscribe = r.subscribe // RLS targets
	}
	r.load.Ensure(rc.DP)
	r.warnUnsupported(rc.DP)
	r.warnHeaders(cfg.RouteConfig, rc.DP)
	cc := &channelConfig{rc: rc, retry: make([]retryKey, len(rc.DP.Routes)), gcpFilters: gcpFilters(rc.DP.Listener)}
	for i := range rc.DP.Routes {
		cc.retry[i] = routePolicy(&rc.DP.Routes[i], rc.DP.VirtualHost)
	}
	sc := r.serviceConfig(cc) // sets cc.retrying
	if r.holder != nil {
		r.holder.Store(cc)
		r.holder.settle()
	}
	r.logger.Debug("updating the channel", xdslog.KeyVersionInfo, rc.Version, xdslog.KeyRoutes, len(rc.DP.Routes), xdslog.KeyClusters, len(rc.DP.Clusters))
	for name, c := range rc.DP.Clusters {
		if c.Err != nil {
			r.logger.Warn("RPCs routed to a cluster will fail", xdslog.KeyCluster, name, xdslog.KeyError, c.Err)
		}
	}
	if err := r.cc.UpdateState(resolver.State{ServiceConfig: sc, Attributes: router.Attributes(rc)}); err != nil {
		r.logger.Debug("the channel rejected the state", xdslog.KeyError, err)
	}
}

// serviceConfig returns the service config for cc: the router, with
// method configs for the retry policies of its routes (gRFC A44, see
// retry.go). It logs, once per set, routes whose policies cannot be
// told apart by method.
func (r *xdsResolver) serviceConfig(cc *channelConfig) *serviceconfig.ParseResult {
	classes, conflicts, unexpressed := retryClasses(cc.rc.DP.Routes, cc.retry, cc.rc.Intercepted)
	cc.retrying = len(classes) > 0
	switch {
	case len(conflicts) == 0:
	case cc.rc.Intercepted:
		r.logger.Debug("routes that can match RPCs of the same methods have different retry policies: the interceptors retry their RPCs", xdslog.KeyRoutes, conflicts)
	default:
		r.warnOnce("retry-conflict:"+strings.Join(conflicts, ","), "routes that can match RPCs of the same methods have different retry policies; those methods are not retried (gRPC's service config names methods only; xdsresolver.DialOptions retries them per RPC)", xdslog.KeyRoutes, conflicts)
	}
	if cc.rc.Intercepted && unexpressed != nil {
		// Path B (retry.go): the interceptors retry the RPCs of these
		// routes whose methods the service config gives another policy.
		cc.unexpressed = unexpressed
		cc.classes = make(map[string]retryKey, len(classes))
		for _, c := range classes {
			cc.classes[c.key] = c.policy
		}
		cc.policies = make([]*rpcretry.Policy, len(unexpressed))
		for i, u := range unexpressed {
			if u {
				cc.policies[i] = rpcretry.NewPolicy(routeRetryPolicy(&cc.rc.DP.Routes[i], cc.rc.DP.VirtualHost))
			}
		}
	}
	js := serviceConfigJSON(classes)
	if js == router.ServiceConfig {
		return r.routerSC
	}
	if js != r.scJSON {
		r.scJSON, r.sc = js, r.cc.ParseServiceConfig(js)
		if r.sc.Err != nil {
			r.logger.Warn("grpc rejects the service config of the retry policies; RPCs are not retried", xdslog.KeyServiceConfig, js, xdslog.KeyError, r.sc.Err)
		} else {
			r.logger.Debug("retry policies", xdslog.KeyServiceConfig, js)
		}
	}
	if r.sc.Err != nil {
		return r.routerSC
	}
	return r.sc
}

// ResourceError fails the channel: the Listener or its RouteConfiguration
// is unusable (gRFC A74, A88).
func (r *xdsResolver) ResourceError(err error, done func()) {
	defer done()
	r.fail(err)
}

// AmbientError logs err; the last State stays in use.
func (r *xdsResolver) AmbientError(err error, done func()) {
	defer done()
	r.logger.Warn("ambient error, keeping the last configuration", xdslog.KeyError, err)
}

// fail makes new RPCs fail with UNAVAILABLE and an error naming the
// target and err. A resolver error alone is not enough once the channel
// has endpoints: its balancer would keep using them. So, as gRPC Go's own
// xDS resolver does, it first pushes a State with no endpoint and
// pick_first, which drops every connection and fails RPCs, then reports
// the error, which pick_first, now failing, puts in the RPCs' status. A
// channel that never had a configuration has no balancer: the error alone
// fails its RPCs, and pushing pick_first first would fail the RPCs made
// before grpc hands it the error (which it does asynchronously; the first
// RPC of a channel of DialOptions is such an RPC) with pick_first's
// "produced zero addresses" instead.
func (r *xdsResolver) fail(err error) {
	err = fmt.Errorf("xdsresolver: %s: %w", r.target, err)
	r.logger.Warn("the configuration is unusable; failing RPCs", xdslog.KeyError, err)
	if r.version > 0 {
		// UpdateState returns balancer.ErrBadResolverState: pick_first
		// has no address. That is the point.
		_ = r.cc.UpdateState(resolver.State{ServiceConfig: r.failSC})
	}
	r.cc.ReportError(err)
	if r.holder != nil {
		r.holder.settle()
	}
}

// warnOnce logs msg at Warn once per channel for key.
func (r *xdsResolver) warnOnce(key, msg string, args ...any) {
	if r.warned[key] {
		return
	}
	if r.warned == nil {
		r.warned = make(map[string]bool)
	}
	r.warned[key] = true
	r.logger.Warn(msg, args...)
}

// warnUnsupported logs, once per channel each, that a configuration uses
// what the channel cannot do without DialOptions: fault injection
// filters, max_stream_duration and stateful sessions (ignored), HTTP
// CONNECT (endpoints dialled directly).
func (r *xdsResolver) warnUnsupported(dp *dataplane.Config) {
	for i := range dp.Routes {
		rt := &dp.Routes[i]
		if r.holder == nil && len(rt.Faults) > 0 {
			r.warnOnce("fault", "fault injection needs xdsresolver.DialOptions; ignored", xdslog.KeyRoute, rt.Desc)
		}
		if r.holder == nil && dp.MaxStreamDuration(rt) > 0 {
			r.warnOnce("msd", "max_stream_duration needs xdsresolver.DialOptions; ignored", xdslog.KeyRoute, rt.Desc)
		}
		if r.holder == nil && rt.Session != nil {
			r.warnOnce("session", "stateful session affinity needs xdsresolver.DialOptions; ignored", xdslog.KeyRoute, rt.Desc)
		}
	}
	if r.holder != nil {
		return
	}
	if f := gcpFilters(dp.Listener); len(f) > 0 {
		r.warnOnce("gcp-authn", "the GCP authentication filter needs xdsresolver.DialOptions with xdsresolver.WithGCPAuthentication; ignored", xdslog.KeyHTTPFilter, f[0].Name)
	}
	for name, c := range dp.Clusters {
		for _, p := range c.Priorities {
			if p.HTTPConnect {
				r.warnOnce("http-connect", "HTTP CONNECT (gRFC A86) needs xdsresolver.DialOptions, or xdsresolver.HTTPConnectDialer on this channel; without, its endpoints are dialled directly", xdslog.KeyCluster, name)
			}
		}
	}
}
