// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver/internal/router"
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
//     served it (see the package doc, "Stateful session affinity");
//   - transport credentials from xdscreds.NewClientCredentials: the TLS or
//     mTLS a cluster's transport_socket asks for (gRFC A29, R-25), and
//     for the endpoints of clusters without one the fallback credentials,
//     plaintext unless WithFallbackCredentials says otherwise, as Envoy
//     connects to an upstream without transport_socket. A
//     grpc.WithTransportCredentials given after these options replaces
//     them, and the TLS of clusters is then not done;
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
// that a route with a runtime_fraction is chosen once per RPC. Before the
// first configuration, RPCs pass unchanged. The interceptors also choose
// the cluster of a weighted_clusters route, so that the filter overrides
// of the weighted cluster (typed_per_filter_config) apply, taking
// precedence over the route's (gRFC A39). Retries come from the service
// config; the interceptors keep the RPCs of a route without retry policy
// from being retried when their method has one (see the package doc,
// "Retries"). cluster_specifier_plugin (RLS) is not supported.
func DialOptions(c *client.Client, opts ...Option) []grpc.DialOption {
	holder := new(atomic.Pointer[channelConfig])
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
	ic := &interceptor{holder: holder}
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

// channelConfig is a configuration of a channel as its interceptors read
// it: the router's, and the retry policy of each route (retry.go).
type channelConfig struct {
	rc *router.Config
	// retry are the retry policies of the routes, by route index.
	retry []retryKey
	// retrying: the service config has retry policies; the interceptors
	// turn retries off for the RPCs of routes without one.
	retrying bool
}

type interceptor struct {
	holder *atomic.Pointer[channelConfig]
}

// prepared is what before prepared for an RPC.
type prepared struct {
	ctx context.Context // the RPC's context: its route, a capped deadline
	// done releases what the RPC holds (a deadline's timer, an active
	// fault); called once when the RPC ends.
	done func()
	// noRetry: the RPC's route has no retry policy, and its method may
	// have one in the service config (retry.go): the caller turns grpc's
	// retries off for it.
	noRetry bool
	// session is the RPC's session (gRFC A55, session.go): the caller
	// adds its cookie to the response. nil for none.
	session *dataplane.Session
}

func noop() {}

// before prepares an RPC: the route, the deadline cap and the faults. It
// returns what it prepared, and the error that ends the RPC at once (an
// injected abort), after which nothing is to be released.
func (ic *interceptor) before(ctx context.Context, method string) (prepared, error) {
	p := prepared{ctx: ctx, done: noop}
	cc := ic.holder.Load()
	if cc == nil {
		return p, nil
	}
	dp := cc.rc.DP
	h := routing.Headers{Ctx: ctx}
	rt := dp.Route(method, &h)
	if rt == nil {
		return p, nil // the picker fails it
	}
	p.noRetry = cc.retrying && cc.retry[rt.Index] == ""
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
	ctx = router.WithRouteChoice(ctx, &router.RouteChoice{Cfg: cc.rc, Route: rt, Target: target, Session: p.session})
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
	p.ctx, p.done = ctx, done
	return p, nil
}

// callOptions returns opts with those p needs, without writing into
// opts' array.
func (p *prepared) callOptions(opts []grpc.CallOption) []grpc.CallOption {
	opts = opts[:len(opts):len(opts)]
	if p.noRetry {
		// grpc commits an RPC whose sent messages exceed its retry
		// buffer: every message (5 bytes of header at least) exceeds 0.
		opts = append(opts, grpc.MaxRetryRPCBufferSize(0))
	}
	return opts
}

func (ic *interceptor) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	p, err := ic.before(ctx, method)
	if err != nil {
		return err
	}
	defer p.done()
	if p.session != nil {
		return sessionUnary(p.session, func(opts []grpc.CallOption) error {
			return invoker(p.ctx, method, req, reply, cc, opts...)
		}, p.callOptions(opts))
	}
	return invoker(p.ctx, method, req, reply, cc, p.callOptions(opts)...)
}

// stream prepares a streaming RPC as unary does, and releases what it
// prepared when the RPC ends, through grpc.OnFinish: gRPC calls it once
// for every kind of stream (also client-streaming RPCs, which end with
// their one RecvMsg, and streams whose context ends while no RecvMsg is
// pending), and when the stream cannot be created.
func (ic *interceptor) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	p, err := ic.before(ctx, method)
	if err != nil {
		return nil, err
	}
	opts = append(p.callOptions(opts), grpc.OnFinish(func(error) { p.done() }))
	s, err := streamer(p.ctx, desc, cc, method, opts...)
	if err != nil || p.session == nil {
		return s, err
	}
	return &sessionStream{ClientStream: s, s: p.session}, nil
}
