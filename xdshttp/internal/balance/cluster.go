// SPDX-License-Identifier: Apache-2.0

package balance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/proxyless/xds/internal/dataplane"
)

// overprovisioning is Envoy's default overprovisioning factor, in
// percent: a priority or a locality with 1/1.4 (71.4 %) of its endpoints
// healthy is fully available. The ClusterLoadAssignment's
// overprovisioning_factor is not decoded (docs/http.md "Load balancing").
const overprovisioning = 140

// ErrNoHealthyEndpoint is wrapped by the error of a Pick that finds no
// endpoint to send the request to: every endpoint of the cluster is
// ejected, and no priority is in panic.
var ErrNoHealthyEndpoint = errors.New("no healthy endpoint")

// Request is what a pick needs of the request.
type Request struct {
	// Hash is the request's hash for ring_hash (dataplane's
	// Route.RequestHash), when HasHash; without one, ring_hash picks with
	// a random hash (gRFC A42).
	Hash    uint64
	HasHash bool
}

// Pick is the endpoint picked for a request, and where it is in the
// cluster.
type Pick struct {
	Priority *dataplane.Priority
	Locality *dataplane.Locality
	Endpoint *dataplane.Endpoint
	Host     *Host
}

// Cluster picks endpoints among the priorities of one dataplane.Cluster
// (for an aggregate cluster, those of its leaf clusters in order, gRFC
// A37). Immutable once New returns, but for its cache of the priority
// loads; Pick is safe for concurrent use.
type Cluster struct {
	// Set by New, read-only afterwards.
	name    string
	err     error // the dataplane.Cluster's Err
	errNone error // wraps ErrNoHealthyEndpoint, naming the cluster
	prios   []priority
	nsets   int // the sets of all priorities

	// state is computed by the first Pick after ejections change.
	state atomic.Pointer[state]
}

// priority is one priority of the cluster and the sets of its endpoint
// policy: one per locality when the policy is under wrr_locality, else
// one for the whole priority.
type priority struct {
	p     *dataplane.Priority
	cfg   *PolicyConfig
	sets  []set
	base  int // index of sets[0] in state.sets
	hosts int // endpoints of the priority
}

// state is what the picks of a Cluster need of the ejections of its hosts,
// computed when they changed (ejections).
type state struct {
	epoch  uint64 // the value of ejections it was computed from
	prios  []prioState
	sets   []setState // of every priority's sets, from priority.base
	single int        // the priority with all the load; -1 when none has
	none   bool       // no priority has load: every Pick fails
}

type prioState struct {
	healthy int    // endpoints not ejected
	health  uint32 // percent, Envoy's health: healthy/hosts × 1.4, ≤ 100
	load    uint32 // percent of the requests, Envoy's priority load
	panic   bool
	locs    []uint64 // cumulative effective locality weights; nil without wrr_locality
}

// New returns the Cluster of c, each endpoint with its Host, which host
// returns (the transport's, kept across configurations by
// dataplane.Endpoint.Key; a nil Host is replaced by a new one). Each
// priority runs the endpoint policy of its Priority.PolicyConfig (the
// result of Policy), or of its Priority.Policy when it has none. c must not
// change afterwards.
func New(c *dataplane.Cluster, host func(e *dataplane.Endpoint) *Host) *Cluster {
	cl := &Cluster{name: c.Name, err: c.Err, errNone: fmt.Errorf("cluster %q: %w", c.Name, ErrNoHealthyEndpoint)}
	if c.Err != nil {
		return cl
	}
	cl.prios = make([]priority, len(c.Priorities))
	for i, dp := range c.Priorities {
		p := &cl.prios[i]
		p.p, p.cfg, p.base = dp, policyOf(dp), cl.nsets
		if p.cfg.byLocality {
			p.sets = make([]set, len(dp.Localities))
		} else {
			p.sets = make([]set, 1)
		}
		for j := range dp.Localities {
			l := &dp.Localities[j]
			s := &p.sets[0]
			if p.cfg.byLocality {
				s = &p.sets[j]
			}
			for k := range l.Endpoints {
				e := &l.Endpoints[k]
				w := e.Weight
				if !p.cfg.byLocality {
					// A policy over the whole priority weighs each
					// endpoint by its share of the priority, as gRPC
					// (gRFC A42, A113).
					w = e.PriorityShare
				}
				h := host(e)
				if h == nil {
					h = new(Host)
				}
				s.members = append(s.members, member{ep: e, loc: l, host: h, weight: uint64(max(w, 1))})
			}
		}
		for j := range p.sets {
			p.sets[j].init(p.cfg)
			p.hosts += len(p.sets[j].members)
		}
		// Envoy weighs a priority's health against all of its hosts, those
		// EDS marks unhealthy (which are not members) included.
		p.hosts = max(p.hosts, dp.HostCount)
		cl.nsets += len(p.sets)
	}
	return cl
}

// init prepares a set of members for its policy.
func (s *set) init(cfg *PolicyConfig) {
	s.cfg = cfg
	s.next.Store(rand.Uint64()) // round robin's random start
	if len(s.members) == 0 {
		return
	}
	switch cfg.kind {
	case pickFirst:
		if cfg.shuffle {
			rand.Shuffle(len(s.members), func(i, j int) { s.members[i], s.members[j] = s.members[j], s.members[i] })
		}
	case weightedRoundRobin:
		cum := make([]uint64, len(s.members))
		var sum uint64
		for i, m := range s.members {
			sum += m.weight
			cum[i] = sum
		}
		s.wrr = newWeights(cum)
	case ringHash:
		s.ring = newRing(s.members, cfg.ringMin, cfg.ringMax)
	}
}

// Name returns the cluster's name.
func (c *Cluster) Name() string { return c.name }

// Pick picks the endpoint of one request (one attempt of it): a priority
// at random by priority load, a locality under wrr_locality, then an
// endpoint by the priority's endpoint policy, skipping ejected hosts but in
// panic (docs/http.md "Load balancing"). When the priority picked has no
// host left to pick, the next priorities with load are tried in turn. It
// fails with the dataplane.Cluster's Err when it has one, else with an
// error wrapping ErrNoHealthyEndpoint that names the cluster. Safe for
// concurrent use; no lock, and no allocation but after ejections change.
func (c *Cluster) Pick(r Request) (Pick, error) {
	if c.err != nil {
		return Pick{}, c.err
	}
	st := c.current()
	pk, ok := c.pick(st, r)
	if !ok && st.epoch != ejections.Load() {
		// Ejections changed since st: once more, with theirs.
		pk, ok = c.pick(c.current(), r)
	}
	if !ok {
		return Pick{}, c.errNone
	}
	return pk, nil
}

// pick is Pick with the state st.
func (c *Cluster) pick(st *state, r Request) (Pick, bool) {
	if st.none {
		return Pick{}, false
	}
	i := st.single
	if i < 0 {
		i = st.choose(rand.Uint32N(100) + 1)
	}
	if pk, ok := c.pickIn(st, i, r); ok {
		return pk, true
	}
	for k := 1; k < len(c.prios); k++ {
		j := (i + k) % len(c.prios)
		if st.prios[j].load == 0 {
			continue
		}
		if pk, ok := c.pickIn(st, j, r); ok {
			return pk, true
		}
	}
	return Pick{}, false
}

// choose returns the priority of x in [1, 100] by the loads, as Envoy's
// choosePriority.
func (st *state) choose(x uint32) int {
	var agg uint32
	for i := range st.prios {
		agg += st.prios[i].load
		if x <= agg {
			return i
		}
	}
	return len(st.prios) - 1
}

// pickIn picks an endpoint of priority i: of a locality picked by
// effective weight under wrr_locality (another, in order, when it has
// none left), else of the whole priority.
func (c *Cluster) pickIn(st *state, i int, r Request) (Pick, bool) {
	p, ps := &c.prios[i], &st.prios[i]
	j := 0
	if ps.locs != nil && ps.locs[len(ps.locs)-1] > 0 {
		j = pickLocality(ps.locs)
	}
	m, ok := p.sets[j].pick(&st.sets[p.base+j], ps.panic, r)
	for k := 0; !ok && k < len(p.sets); k++ {
		if k != j {
			m, ok = p.sets[k].pick(&st.sets[p.base+k], ps.panic, r)
		}
	}
	if !ok {
		return Pick{}, false
	}
	return Pick{Priority: p.p, Locality: m.loc, Endpoint: m.ep, Host: m.host}, true
}

// current returns the state of the current ejections, computing it when
// they changed since the last. Concurrent Picks may compute it each; the
// last stored wins, and a state of older ejections is computed again by
// the next Pick.
func (c *Cluster) current() *state {
	e := ejections.Load()
	if st := c.state.Load(); st != nil && st.epoch == e {
		return st
	}
	st := c.compute(e)
	c.state.Store(st)
	return st
}

// compute returns the state of the hosts' ejections, which ejections
// counted epoch times or more. Envoy's priority load, panic and total
// panic
// (https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/priority,
// .../panic_threshold; LoadBalancerBase::recalculatePerPriorityState and
// recalculatePerPriorityPanic in Envoy's source), with integer percents as
// Envoy computes them:
//
//   - health(P) = min(100, 140 × healthy(P) / hosts(P));
//   - normalized total health NT = min(100, Σ health);
//   - load(P) = min(what is left of 100, health(P) × 100 / NT), in
//     priority order; what rounding leaves goes to the first priority with
//     health;
//   - a priority is in panic when NT < 100 and its healthy share itself
//     (without the 1.4 factor, as Envoy's isHostSetInPanic) is below the
//     threshold: 100 × healthy(P) < threshold × hosts(P);
//   - when every priority is in panic (Envoy's total panic), or none has
//     health, the load goes to the priorities in panic by their number of
//     endpoints; none in panic (threshold 0): no load, Pick fails.
func (c *Cluster) compute(epoch uint64) *state {
	st := &state{epoch: epoch, prios: make([]prioState, len(c.prios)), sets: make([]setState, c.nsets), single: -1}
	var sumHealth uint32
	for i := range c.prios {
		p, ps := &c.prios[i], &st.prios[i]
		for j := range p.sets {
			ps.healthy += p.sets[j].state(&st.sets[p.base+j])
		}
		if p.hosts > 0 {
			ps.health = uint32(min(100, overprovisioning*ps.healthy/p.hosts))
		}
		sumHealth += ps.health
	}
	nt := min(100, sumHealth)
	panics, panicHosts := 0, 0
	for i := range c.prios {
		p, ps := &c.prios[i], &st.prios[i]
		ps.panic = nt < 100 && p.hosts > 0 && 100*ps.healthy < int(p.cfg.panicAt)*p.hosts
		if ps.panic {
			panics++
			panicHosts += p.hosts
		}
	}
	switch {
	case panics > 0 && (panics == len(c.prios) || nt == 0):
		// Envoy's recalculateLoadInTotalPanic: by number of endpoints.
		left, first := uint32(100), -1
		for i := range c.prios {
			ps := &st.prios[i]
			if !ps.panic {
				continue
			}
			if first < 0 {
				first = i
			}
			ps.load = uint32(100 * c.prios[i].hosts / panicHosts)
			left -= ps.load
		}
		st.prios[first].load += left
	case nt > 0:
		// Envoy's distributeLoad.
		left, first := uint32(100), -1
		for i := range st.prios {
			ps := &st.prios[i]
			if first < 0 && ps.health > 0 {
				first = i
			}
			ps.load = min(left, ps.health*100/nt)
			left -= ps.load
		}
		st.prios[first].load += left
	default:
		st.none = true
	}
	for i := range c.prios {
		p, ps := &c.prios[i], &st.prios[i]
		if ps.load == 100 {
			st.single = i
		}
		if !p.cfg.byLocality {
			continue
		}
		ps.locs = make([]uint64, len(p.sets))
		var sum uint64
		for j := range p.sets {
			sum += localityWeight(p.p.Localities[j].Weight, st.sets[p.base+j].n, len(p.sets[j].members), ps.panic)
			ps.locs[j] = sum
		}
	}
	return st
}

// state computes the setState of s into ss, and returns its number of
// members not ejected.
func (s *set) state(ss *setState) int {
	for _, m := range s.members {
		if !m.host.Ejected() {
			ss.n++
		}
	}
	if ss.n == len(s.members) {
		return ss.n
	}
	ss.avail = make([]int32, 0, ss.n)
	for i, m := range s.members {
		if !m.host.Ejected() {
			ss.avail = append(ss.avail, int32(i))
		}
	}
	// A host ejected between the two loops leaves avail shorter than n.
	ss.n = len(ss.avail)
	if s.cfg.kind == weightedRoundRobin && ss.n > 0 {
		cum := make([]uint64, ss.n)
		var sum uint64
		for i, k := range ss.avail {
			sum += s.members[k].weight
			cum[i] = sum
		}
		ss.wrr = newWeights(cum)
	}
	return ss.n
}
