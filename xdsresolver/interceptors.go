// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/calllabels"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver/internal/router"
	"github.com/proxyless/xds/xdsresolver/internal/rpcretry"
)

func unavailable(msg string) error { return status.Error(codes.Unavailable, msg) }

// DialOptions returns everything a ClientConn needs for xDS targets
// served by c, and is the one way to make such a channel:
//
//	cc, err := grpc.NewClient("xds:///svc", xdsresolver.DialOptions(c)...)
//
// The options are, in order:
//
//   - the resolver, NewBuilder(c, opts...);
//   - unary and stream interceptors that apply, per RPC, what a resolver
//     and a balancer cannot: the route's max_stream_duration
//     (grpc_timeout_header_max when set, else max_stream_duration; else
//     the Listener's), which caps the RPC's deadline (gRFC A31); the
//     fault injection filters of the Listener's HTTP filter chain, with
//     the virtual host's and route's overrides (gRFC A33): delays and
//     aborts, with their percentages, header matchers, header-driven
//     faults (x-envoy-fault-*) and max_active_faults (the faults in
//     progress in the whole process); the stateful session filter (gRFC
//     A55, A60): the session cookie of an RPC pins it to its cluster and
//     endpoint, and its response gets the set-cookie of the endpoint that
//     served it (see the package doc, "Stateful session affinity"); the
//     request header rewriting of the RPC's route (request_headers_to_add
//     and _to_remove, see the package doc, "Header rewriting");
//   - transport credentials from xdscreds.NewClientCredentials: the TLS or
//     mTLS a cluster's transport_socket asks for (gRFC A29, R-25), and
//     for the endpoints of clusters without one the fallback credentials,
//     plaintext unless WithFallbackCredentials says otherwise, as Envoy
//     connects to an upstream without transport_socket. A
//     grpc.WithTransportCredentials given after these options replaces
//     them, and the TLS of clusters is then not done;
//   - the call credentials of the GCP authentication filter (gRFC A83),
//     with WithGCPAuthentication;
//   - when c was made with client.WithHTTPConnect, HTTPConnectDialer:
//     connections to endpoints with an HTTP CONNECT proxy go through it
//     (gRFC A86).
//
// Options added after these are the application's (its own interceptors
// run after the ones above). Call DialOptions once per ClientConn: the
// interceptors hold the configuration of one channel.
//
// The interceptors match the RPC against the routes of the channel's
// current configuration, and the router uses the route they matched, so
// that a route with a runtime_fraction is chosen once per RPC. An RPC
// made before the channel's first configuration waits for it (grpc would
// hold its pick until then anyway), up to its deadline; when the resolver
// fails instead, the RPC passes unchanged (and fails in grpc). The
// interceptors also choose
// the cluster of a weighted_clusters route, so that the filter overrides
// of the weighted cluster (typed_per_filter_config) apply, taking
// precedence over the route's (gRFC A39). Retries come from the service
// config where it can express the RPC's route's policy; the interceptors
// keep the RPCs of a route without retry policy from being retried when
// their method has one, and retry, per RPC, those whose route's policy
// the service config cannot give their method (see the package doc,
// "Retries").
func DialOptions(c *client.Client, opts ...Option) []grpc.DialOption {
	holder := &channelHolder{ready: make(chan struct{})}
	opts = append(opts[:len(opts):len(opts)], func(o *options) { o.holder = holder })
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	fallback := o.fallback
	if fallback == nil {
		fallback = insecure.NewCredentials()
	}
	// Not an error: NewClientCredentials fails only without fallback.
	creds, _ := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: fallback})
	ic := &interceptor{holder: holder, gcp: o.gcpAuthn}
	dopts := []grpc.DialOption{
		grpc.WithResolvers(NewBuilder(c, opts...)),
		grpc.WithChainUnaryInterceptor(ic.unary),
		grpc.WithChainStreamInterceptor(ic.stream),
		grpc.WithTransportCredentials(creds),
	}
	if c.HTTPConnect() {
		dopts = append(dopts, HTTPConnectDialer())
	}
	return dopts
}

// channelHolder holds the configuration of a channel of DialOptions for
// its interceptors: the last one its resolver made.
type channelHolder struct {
	atomic.Pointer[channelConfig]
	ready chan struct{} // closed by settle
	once  sync.Once
}

// settle says that the resolver has a first result, a configuration or an
// error: the interceptors wait no longer.
func (h *channelHolder) settle() { h.once.Do(func() { close(h.ready) }) }

// wait returns the configuration of cc, the channel; before the first,
// it has cc leave idle mode (which starts the resolver) and waits for the
// resolver's first result or the end of ctx, as grpc holds the RPC's
// pick until the resolver's first result, so that what the configuration
// asks of the RPC (its credentials, its deadline, its faults) applies
// from the first RPC. nil when there is still none: the RPC goes on
// unchanged.
func (h *channelHolder) wait(ctx context.Context, cc *grpc.ClientConn) *channelConfig {
	if c := h.Load(); c != nil {
		return c
	}
	cc.Connect()
	select {
	case <-h.ready:
	case <-ctx.Done():
	}
	return h.Load()
}

// channelConfig is a configuration of a channel as its interceptors read
// it: the router's, and the retry policy of each route (retry.go).
type channelConfig struct {
	rc *router.Config
	// retry are the retry policies of the routes, by route index.
	retry []retryKey
	// retrying: the service config has retry policies; the interceptors
	// turn retries off for the RPCs of routes without one.
	retrying bool
	// unexpressed marks, by route index, the routes whose policy the
	// service config does not give every method they can match (retry.go,
	// path B); nil when there are none. classes are the policies of the
	// service config by method class, and policies the routes' own, set
	// for the unexpressed ones: the interceptors retry such a route's RPC
	// when its method's policy is another.
	unexpressed []bool
	classes     map[string]retryKey
	policies    []*rpcretry.Policy
	// gcpFilters are the Listener's GCP authentication filters (gRFC
	// A83), in chain order; nil for none.
	gcpFilters []resources.HTTPFilter
}

type interceptor struct {
	holder *channelHolder
	gcp    GCPAuthenticator // WithGCPAuthentication's; nil for none
}

// prepared is what before prepared for an RPC.
type prepared struct {
	ctx context.Context // the RPC's context: its route, a capped deadline
	// done releases what the RPC holds (a deadline's timer, an active
	// fault); called once when the RPC ends.
	done func()
	// noRetry: the RPC's route has no retry policy, and its method may
	// have one in the service config (retry.go): the caller turns grpc's
	// retries off for it. Also set with retry when the method has
	// another policy.
	noRetry bool
	// retry is the RPC's route's retry policy when the service config
	// gives its method another (retry.go, path B): the interceptor
	// retries the RPC; nil when grpc's retries are the RPC's.
	retry *rpcretry.Policy
	// choice is the RPC's route choice, for the picker.
	choice *router.RouteChoice
	// callCreds are the RPC's call credentials of the GCP authentication
	// filters (gRFC A83), as call options; nil for none.
	callCreds []grpc.CallOption
	// session is the RPC's session (gRFC A55, session.go): the caller
	// adds its cookie to the response. nil for none.
	session *dataplane.Session
}

func noop() {}

// before prepares an RPC: the route, the deadline cap and the faults. It
// returns what it prepared, and the error that ends the RPC at once (an
// injected abort), after which nothing is to be released.
func (ic *interceptor) before(ctx context.Context, method string, conn *grpc.ClientConn) (prepared, error) {
	p := prepared{ctx: ctx, done: noop}
	cc := ic.holder.wait(ctx, conn)
	if cc == nil {
		p.ctx = calllabels.NewContext(ctx, new(calllabels.Holder))
		return p, nil
	}
	dp := cc.rc.DP
	h := routing.Headers{Ctx: ctx}
	rt := dp.Route(method, &h)
	if rt == nil { // the picker fails it, unless the configuration changes meanwhile
		p.ctx = calllabels.NewContext(ctx, new(calllabels.Holder))
		return p, nil
	}
	p.noRetry = cc.retrying && cc.retry[rt.Index] == ""
	if cc.unexpressed != nil && cc.unexpressed[rt.Index] {
		if mp := methodPolicy(cc.classes, method); mp != cc.retry[rt.Index] {
			p.retry, p.noRetry = cc.policies[rt.Index], mp != ""
		}
	}
	// The cluster is chosen here, not at pick time, so that the fault
	// filter overrides of a weighted cluster apply (gRFC A39).
	target := rt.PickTarget() // nil for a route that forwards to no cluster
	if rt.SessionErr != nil {
		return p, unavailable(rt.Desc + ": " + rt.SessionErr.Error())
	}
	if rt.Session != nil && target != nil && dataplane.CookiePathMatches(rt.Session.Path, method) {
		// The session's cookie may name the cluster (gRFC A60).
		p.session, target = dataplane.NewSession(rt.Session, cookies(&h), rt, target)
	}
	p.choice = &router.RouteChoice{Cfg: cc.rc, Route: rt, Target: target, Session: p.session}
	ctx = calllabels.NewContext(router.WithRouteChoice(ctx, p.choice), &p.choice.Labels)
	faults, faultErr := target.FaultsFor(rt)
	done := noop
	if d := dp.MaxStreamDuration(rt); d > 0 {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > d {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			done = cancel
		}
	}
	if faultErr != nil {
		done()
		return p, unavailable(rt.Desc + ": " + faultErr.Error())
	}
	for _, f := range faults {
		release, err := injectFault(ctx, f, &h)
		prev := done
		done = func() { release(); prev() }
		if err != nil {
			done()
			return p, err
		}
	}
	if len(cc.gcpFilters) > 0 && target != nil {
		var err error
		if p.callCreds, err = ic.gcpCredentials(cc.gcpFilters, dp.Clusters[target.Cluster], rt); err != nil {
			done()
			return p, err
		}
	}
	if req, _ := target.MutationsFor(rt); len(req) > 0 {
		// The picker routes and balances on the headers as the
		// application sent them, as Envoy's router does before it
		// finalizes the request's headers (headers.go).
		p.choice.Headers = ctx
		ctx = withHeaderMutations(ctx, req)
	}
	p.ctx, p.done = ctx, done
	return p, nil
}

// gcpCredentials returns the call credentials of the GCP authentication
// filters of an RPC of rt sent to cluster c (gRFC A83): for each filter
// whose name has an audience in the cluster's metadata, the credentials of
// that audience. As gRPC's, it does nothing for a route of a cluster
// specifier plugin, whose cluster is chosen later.
func (ic *interceptor) gcpCredentials(filters []resources.HTTPFilter, c *dataplane.Cluster, rt *dataplane.Route) ([]grpc.CallOption, error) {
	if c == nil || len(c.Audiences) == 0 {
		return nil, nil
	}
	var out []grpc.CallOption
	for _, f := range filters {
		audience, ok := c.Audiences[f.Name]
		if !ok {
			continue
		}
		if ic.gcp == nil {
			return nil, unavailable(fmt.Sprintf("%s: cluster %q needs the GCP authentication filter %q (audience %q), which this channel does not run: give DialOptions xdsresolver.WithGCPAuthentication(gcpauthn.New())", rt.Desc, c.Name, f.Name, audience))
		}
		creds, err := ic.gcp.CallCredentials(f.Name, f.GCPAuthnCacheSize, audience)
		if err != nil {
			return nil, unavailable(fmt.Sprintf("%s: GCP authentication filter %q, audience %q: %v", rt.Desc, f.Name, audience, err))
		}
		out = append(out, grpc.PerRPCCredentials(creds))
	}
	return out, nil
}

// callOptions returns opts with those p needs, without writing into
// opts' array.
func (p *prepared) callOptions(opts []grpc.CallOption) []grpc.CallOption {
	opts = opts[:len(opts):len(opts)]
	opts = append(opts, p.callCreds...)
	if p.noRetry {
		// grpc commits an RPC whose sent messages exceed its retry
		// buffer: every message (5 bytes of header at least) exceeds 0.
		opts = append(opts, grpc.MaxRetryRPCBufferSize(0))
	}
	return opts
}

func (ic *interceptor) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	p, err := ic.before(ctx, method, cc)
	if err != nil {
		return err
	}
	defer p.done()
	attempt := func(ctx context.Context, opts []grpc.CallOption) error {
		if p.session != nil {
			return sessionUnary(p.session, func(opts []grpc.CallOption) error {
				return invoker(ctx, method, req, reply, cc, opts...)
			}, opts)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	if p.retry == nil {
		return attempt(p.ctx, p.callOptions(opts))
	}
	// Path B (retry.go): each attempt is an RPC of its own, of which
	// grpc retries nothing but transparently.
	return p.retry.Unary(p.ctx, opts, func(ctx context.Context, aopts []grpc.CallOption) error {
		p.choice.PickFailed.Store(false)
		return attempt(ctx, p.callOptions(aopts))
	}, p.choice.PickFailed.Load)
}

// stream prepares a streaming RPC as unary does, and releases what it
// prepared when the RPC ends, through grpc.OnFinish: gRPC calls it once
// for every kind of stream (also client-streaming RPCs, which end with
// their one RecvMsg, and streams whose context ends while no RecvMsg is
// pending), and when the stream cannot be created.
func (ic *interceptor) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	p, err := ic.before(ctx, method, cc)
	if err != nil {
		return nil, err
	}
	var s grpc.ClientStream
	if p.retry == nil {
		s, err = streamer(p.ctx, desc, cc, method, append(p.callOptions(opts), grpc.OnFinish(func(error) { p.done() }))...)
	} else {
		s, err = p.retryStream(desc, cc, method, streamer, opts)
	}
	if err != nil || p.session == nil {
		return s, err
	}
	return &sessionStream{ClientStream: s, s: p.session}, nil
}

// retryStream makes a stream that the interceptor retries (retry.go,
// path B). What the RPC holds is released once no attempt is running and
// none will be made: each attempt, and the retries, hold a reference,
// the attempt's until grpc's OnFinish of it, the retries' until the RPC
// is committed.
func (p *prepared) retryStream(desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts []grpc.CallOption) (grpc.ClientStream, error) {
	var refs atomic.Int32
	refs.Store(1) // the retries'
	release := func() {
		if refs.Add(-1) == 0 {
			p.done()
		}
	}
	newStream := func(ctx context.Context, aopts []grpc.CallOption) (grpc.ClientStream, error) {
		p.choice.PickFailed.Store(false)
		refs.Add(1)
		return streamer(ctx, desc, cc, method, append(p.callOptions(aopts), grpc.OnFinish(func(error) { release() }))...)
	}
	return p.retry.Stream(p.ctx, opts, newStream, p.choice.PickFailed.Load, release)
}
