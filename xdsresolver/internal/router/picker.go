// SPDX-License-Identifier: Apache-2.0

package router

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/calllabels"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resources"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
)

// picker routes one RPC: the first route of the virtual host that matches
// (gRFC A28), one of its clusters by weight, the cluster's selected
// priority, drops and circuit breaking, one of the priority's localities
// by weight, then the locality's own picker. It is immutable; a new one is
// made on every change.
type picker struct {
	cfg       *Config
	clusters  map[string]*clusterPicker
	plugins   map[*Plugin]balancer.Picker // the pickers of the plugins' RLS children; nil when none
	channelID uint64
	hostnames *sync.Map // the router's, for authority rewriting
}

// clusterPicker picks for one route cluster: fails with err, or picks
// with prio.
type clusterPicker struct {
	err  error
	prio *prioPicker
}

// prioPicker picks in the selected priority of a cluster.
type prioPicker struct {
	cfg     *Priority
	counter *atomic.Int64           // in-flight RPCs of the leaf cluster (gRFC A32)
	ref     *clusterRef             // in-flight RPCs of the route cluster, which keep its children
	done    func(balancer.DoneInfo) // releases counter and ref; see newPrioPicker
	errs    prioErrors
	ready   []weightedPicker // READY localities, cumulative weights
	total   uint64
	other   balancer.Picker // when no locality is READY: the best child's
	// otherLoad is the load of other's locality; nil when not reported.
	otherLoad *lrs.LocalityLoad
	// otherLabels are the xDS labels of other's locality; nil for a
	// child over the whole priority (found from the SubConn).
	otherLabels *calllabels.Labels
	// ringLoad is the load of a cluster whose child covers the whole
	// priority (ring_hash): the locality is found from the SubConn.
	ringLoad *lrs.ClusterLoad
	ring     *child
	// clusterLoad is the load of the cluster, for RPCs of sessions; nil
	// when not reported.
	clusterLoad *lrs.ClusterLoad
	// wrapped: the children's SubConns are wrapped (subconn.go), for
	// outlier detection or sessions.
	wrapped bool
	// sess are the sessions of the priority; nil without.
	sess *sessGroup
}

type weightedPicker struct {
	cum    uint64
	p      balancer.Picker
	load   *lrs.LocalityLoad  // nil when load is not reported
	labels *calllabels.Labels // the locality's xDS labels
}

// prioErrors are the errors of a priority, made once per picker, and the
// drop counters of its load report.
type prioErrors struct {
	drops        []error          // per drop category
	dropCounters []*atomic.Uint64 // per drop category; nil when load is not reported
	breaker      error
	breakerDrops *atomic.Uint64 // nil when load is not reported
}

func dropErrors(p *Priority, load *lrs.ClusterLoad) prioErrors {
	e := prioErrors{drops: make([]error, len(p.Drops))}
	for i, d := range p.Drops {
		e.drops[i] = status.Errorf(codes.Unavailable, "RPC dropped by cluster %q: drop_overloads category %q", p.Leaf, d.Category)
	}
	if load != nil {
		e.dropCounters = make([]*atomic.Uint64, len(p.Drops))
		for i, d := range p.Drops {
			e.dropCounters[i] = load.DropCounter(d.Category)
		}
		e.breakerDrops = load.DropCounter("")
	}
	e.breaker = status.Errorf(codes.Unavailable, "RPC refused by cluster %q: max_requests (%d) concurrent RPCs reached (circuit breaking)", p.Leaf, p.MaxRequests)
	return e
}

// newPrioPicker returns a prioPicker for priority cfg, counting its RPCs
// in counter (circuit breaking) and ref (the route cluster's).
func newPrioPicker(cfg *Priority, counter *atomic.Int64, ref *clusterRef) *prioPicker {
	return &prioPicker{cfg: cfg, counter: counter, ref: ref, done: func(balancer.DoneInfo) {
		counter.Add(-1)
		ref.release()
	}}
}

func unavailable(msg string) error { return status.Error(codes.Unavailable, msg) }

// Pick routes and picks one RPC.
func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	h := routing.Headers{Ctx: info.Ctx}
	var sess *dataplane.Session
	var labels *calllabels.Holder // the RPC's xDS labels, set when an endpoint is picked
	if p.cfg.Intercepted {
		if rc, ok := info.Ctx.Value(routeChoiceKey{}).(*RouteChoice); ok {
			if rc.Headers != nil {
				info.Ctx = rc.Headers
				h.Ctx = rc.Headers
			}
			labels = &rc.Labels
			labels.Set(nil)
			var (
				res balancer.PickResult
				err error
			)
			if rc.Cfg == p.cfg {
				res, err = p.pickRoute(rc.Route, rc.Target, rc.Session, info, &h, labels)
			} else {
				// The interceptor matched in another configuration: the
				// route is matched again, the session stays.
				res, err = p.pickAgain(rc.Session, info, &h, labels)
			}
			if err != nil {
				// grpc never retries a pick that fails with a status (a
				// drop); nor do the interceptor's retries.
				if _, isStatus := status.FromError(err); isStatus {
					rc.PickFailed.Store(true)
				}
			}
			return res, err
		}
	}
	labels = calllabels.FromContext(info.Ctx)
	labels.Set(nil)
	return p.pickAgain(sess, info, &h, labels)
}

// pickAgain matches the RPC's route, and picks for it.
func (p *picker) pickAgain(sess *dataplane.Session, info balancer.PickInfo, h *routing.Headers, labels *calllabels.Holder) (balancer.PickResult, error) {
	if rt := p.cfg.DP.Route(info.FullMethodName, h); rt != nil {
		return p.pickRoute(rt, nil, sess, info, h, labels)
	}
	return balancer.PickResult{}, status.Errorf(codes.Unavailable, "RPC %s matches no route of the virtual host", info.FullMethodName)
}

// pickRoute picks for an RPC that matched rt, sending it to target (one of
// rt's clusters, chosen by the interceptor), or, when nil, to a cluster
// of rt chosen by weight; sess is the RPC's session, nil for none.
func (p *picker) pickRoute(rt *dataplane.Route, target *dataplane.Target, sess *dataplane.Session, info balancer.PickInfo, h *routing.Headers, labels *calllabels.Holder) (balancer.PickResult, error) {
	switch rt.Action {
	case resources.RouteActionCluster, resources.RouteActionWeightedClusters:
	case resources.RouteActionNonForwarding:
		return balancer.PickResult{}, status.Errorf(codes.Unavailable, "RPC %s matched %s, whose action is non_forwarding", info.FullMethodName, rt.Desc)
	case resources.RouteActionClusterSpecifierPlugin:
		// RLS picks the target; its target's picker picks in the
		// target cluster (rls.go).
		pl := p.cfg.Plugins[rt.Plugin]
		if pl == nil {
			return balancer.PickResult{}, status.Errorf(codes.Unavailable, "RPC %s matched %s, whose cluster_specifier_plugin %q is not in the configuration", info.FullMethodName, rt.Desc, rt.Plugin)
		}
		if pl.Err != nil {
			return balancer.PickResult{}, status.Errorf(codes.Unavailable, "RPC %s matched %s, whose cluster_specifier_plugin %q cannot be used: %v", info.FullMethodName, rt.Desc, rt.Plugin, pl.Err)
		}
		if pk := p.plugins[pl]; pk != nil {
			return pk.Pick(info)
		}
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	default:
		return balancer.PickResult{}, status.Errorf(codes.Unavailable, "RPC %s matched %s, whose action is not supported", info.FullMethodName, rt.Desc)
	}
	if target == nil {
		target = rt.PickTarget()
	}
	t := target.Cluster
	cp := p.clusters[t]
	if cp == nil { // cannot happen: every route cluster has one
		return balancer.PickResult{}, status.Errorf(codes.Unavailable, "cluster %q has no picker", t)
	}
	if cp.err != nil {
		return balancer.PickResult{}, cp.err
	}
	res, err := cp.prio.pick(p, rt, t, sess, info, h, labels)
	p.rewriteAuthority(rt, &res, err)
	return res, err
}

// rewriteAuthority sets the :authority of the RPC of a pick (res, err) of
// route rt to the host name of the picked endpoint, when the route has
// auto_host_rewrite from a trusted server and the endpoint has a host name
// (gRFC A81). grpc applies it unless the RPC has grpc.CallAuthority; the
// channel's credentials validate it (TLS: the server certificate must be
// valid for it).
func (p *picker) rewriteAuthority(rt *dataplane.Route, res *balancer.PickResult, err error) {
	if err != nil || !p.cfg.AuthorityRewrite || !rt.Res.Action.AutoHostRewrite || res.SubConn == nil {
		return
	}
	h, ok := p.hostnames.Load(res.SubConn)
	if !ok {
		return
	}
	if res.Metadata == nil {
		res.Metadata = metadata.Pairs(":authority", h.(string))
	} else {
		res.Metadata = res.Metadata.Copy()
		res.Metadata.Set(":authority", h.(string))
	}
}

// pick applies the drops and the circuit breaker of the priority's leaf
// cluster; then, for an RPC of a session pinned to an endpoint of the
// priority that can take it, picks that endpoint (gRFC A55); else picks
// a locality by weight and delegates to its picker.
func (pp *prioPicker) pick(p *picker, rt *dataplane.Route, cluster string, sess *dataplane.Session, info balancer.PickInfo, h *routing.Headers, labels *calllabels.Holder) (balancer.PickResult, error) {
	if i, drop := pp.cfg.PickDrop(); drop {
		if pp.errs.dropCounters != nil {
			pp.errs.dropCounters[i].Add(1)
		}
		return balancer.PickResult{}, pp.errs.drops[i]
	}
	if !dataplane.Acquire(pp.counter, pp.cfg.MaxRequests) {
		if pp.errs.breakerDrops != nil {
			pp.errs.breakerDrops.Add(1)
		}
		return balancer.PickResult{}, pp.errs.breaker
	}
	if sess != nil && len(sess.Override) > 0 && pp.sess != nil {
		if w, e, err, ok := pp.sess.pick(sess.Override); ok {
			if err != nil {
				pp.counter.Add(-1)
				return balancer.PickResult{}, err
			}
			var load *lrs.LocalityLoad
			if pp.clusterLoad != nil {
				load = pp.clusterLoad.Locality(e.Locality)
			}
			labels.Set(pp.cfg.Labels[e.Locality])
			return pp.done1(balancer.PickResult{SubConn: w}, load, sess, cluster)
		}
	}
	child, load, lbl := pp.other, pp.otherLoad, pp.otherLabels
	if len(pp.ready) > 0 {
		child, load, lbl = pp.ready[0].p, pp.ready[0].load, pp.ready[0].labels
		if len(pp.ready) > 1 {
			x := rand.Uint64N(pp.total)
			for _, w := range pp.ready {
				if x < w.cum {
					child, load, lbl = w.p, w.load, w.labels
					break
				}
			}
		}
	}
	if child == nil {
		pp.counter.Add(-1)
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	if pp.cfg.Policy.RingHash {
		// As gRPC's xDS channel: the hash of the route's policies, else a
		// random one (gRFC A42), handed to ring_hash as a value it hashes
		// back to it (hashPreimage).
		hash, ok := rt.RequestHash(h, p.channelID)
		if !ok {
			hash = rand.Uint64()
		}
		info.Ctx = metadata.AppendToOutgoingContext(info.Ctx, HashHeader, hashPreimage(hash))
	}
	res, err := child.Pick(info)
	if err != nil {
		pp.counter.Add(-1)
		return res, err
	}
	if pp.ring != nil && (pp.ringLoad != nil || labels != nil) {
		if v, ok := pp.ring.scLocality.Load(res.SubConn); ok {
			id := v.(resources.LocalityID)
			lbl = pp.cfg.Labels[id]
			if pp.ringLoad != nil {
				load = pp.ringLoad.Locality(id)
			}
		}
	}
	labels.Set(lbl)
	return pp.done1(res, load, sess, cluster)
}

// done1 completes a pick of the route cluster cluster that chose res:
// the SubConn of a wrapper (subconn.go) for the channel, the endpoint for
// the session, and the end of the RPC counted (circuit breaking, the
// route cluster's RPCs in flight, load reports, outlier detection).
func (pp *prioPicker) done1(res balancer.PickResult, load *lrs.LocalityLoad, sess *dataplane.Session, cluster string) (balancer.PickResult, error) {
	counter, done, ref := pp.counter, res.Done, pp.ref
	ref.n.Add(1)
	var ep *dataplane.OutlierEndpoint
	if pp.wrapped {
		if w, ok := res.SubConn.(*subConn); ok {
			res.SubConn, ep = w.SubConn, w.ep
			if sess != nil {
				sess.Picked(w.addrs, cluster)
			}
		}
	}
	if load == nil && done == nil && ep == nil {
		// The common case (no load report, a child without Done): a
		// function made once per picker, not once per RPC.
		res.Done = pp.done
		return res, nil
	}
	if load != nil {
		load.Start()
	}
	res.Done = func(di balancer.DoneInfo) {
		counter.Add(-1)
		if ep != nil {
			ep.Record(di.Err)
		}
		if load != nil {
			load.Finish(di.Err)
			if m := pp.cfg.BackendMetrics; m != nil {
				// gRFC A64, A85: the backend's ORCA report, from its
				// trailer (grpc's orca package parses it).
				r, _ := di.ServerLoad.(*v3orcapb.OrcaLoadReport)
				load.AddBackendMetrics(r, m)
			}
		}
		if done != nil {
			done(di)
		}
		ref.release()
	}
	return res, nil
}

// queuePicker queues RPCs until a child reports a picker.
type queuePicker struct{}

func (queuePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}
