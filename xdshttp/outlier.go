// SPDX-License-Identifier: Apache-2.0

package xdshttp

import (
	"sync"
	"time"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/xdshttp/internal/balance"
)

// outliers runs the outlier detection (gRFC A50, Envoy's outlier
// detection; docs/http.md, "Outlier detection") of the priorities of the
// leaf clusters the Transport's configurations use: one
// dataplane.OutlierDetector per priority (Priority.GroupKey), shared by
// every host that uses it, whose ejections are applied to the endpoints'
// balance.Host. One goroutine, started with the first detector and
// stopped by Close, runs the interval timers.
type outliers struct {
	mu      sync.Mutex
	groups  map[string]*odGroup
	running bool
	closed  bool
	wake    chan struct{} // a detector's timer changed
	done    chan struct{} // closed by stop
	wg      sync.WaitGroup
}

// odGroup is the detector of one priority and the endpoints' state it
// ejects.
type odGroup struct {
	det         *dataplane.OutlierDetector
	next        time.Time // the end of the current interval
	hosts       map[*dataplane.OutlierEndpoint]*balance.Host
	consecutive bool // consecutive-failure ejection is on
}

// outlierRef is what a request needs to record its result for outlier
// detection: its endpoint's state in its priority's detector.
type outlierRef struct {
	oe *dataplane.OutlierEndpoint
	g  *odGroup
}

// record counts the result of an attempt to ref's endpoint: in the
// interval's counts (result nil: success) without lock, and, when its
// detector ejects on consecutive failures, in those, under the lock,
// ejecting at once when a threshold is reached (status 0: no response).
func (o *outliers) record(ref outlierRef, result error, status int) {
	ref.oe.Record(result)
	if !ref.g.consecutive {
		return
	}
	local := result != nil && status == 0
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	for _, ch := range ref.g.det.RecordConsecutive(ref.oe, status, local, time.Now(), nil) {
		if h := ref.g.hosts[ch.Endpoint]; h != nil {
			h.SetEjected(ch.Eject)
		}
	}
}

func (o *outliers) init() {
	o.groups = make(map[string]*odGroup)
	o.wake = make(chan struct{}, 1)
	o.done = make(chan struct{})
}

// add gives the detectors the priorities of st's clusters that have
// outlier detection, and st the OutlierEndpoint of each of their
// endpoints (hostState.outlier), for the requests to record their results.
func (o *outliers) add(st *hostState) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	for _, cs := range st.clusters {
		if cs.err != nil {
			continue
		}
		for _, p := range cs.c.Priorities {
			if p.Outlier == nil {
				continue
			}
			k := p.GroupKey()
			g := o.groups[k]
			if g == nil {
				g = &odGroup{det: dataplane.NewOutlierDetector(p.Outlier)}
				o.groups[k] = g
			}
			g.det.SetConfig(p.Outlier)
			g.consecutive = dataplane.ConsecutiveActive(p.Outlier)
			var eps []dataplane.Endpoint
			for li := range p.Localities {
				eps = append(eps, p.Localities[li].Endpoints...)
			}
			g.det.SetEndpoints(eps)
			g.hosts = make(map[*dataplane.OutlierEndpoint]*balance.Host, len(eps))
			for li := range p.Localities {
				for ei := range p.Localities[li].Endpoints {
					e := &p.Localities[li].Endpoints[ei]
					oe := g.det.Endpoint(e.Addresses[0])
					g.hosts[oe] = st.byEP[e]
					st.outlier[e] = outlierRef{oe, g}
					st.byEP[e].SetEjected(oe.Ejected())
				}
			}
			g.next = now.Add(g.det.Start(now))
			st.odGroups[k] = true
		}
	}
	if !o.running && len(o.groups) > 0 {
		o.running = true
		o.wg.Add(1)
		go o.run()
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// retain drops the detectors no configuration uses (used returns false),
// and lifts the ejections they made: an endpoint whose cluster no longer
// has outlier detection is picked again.
func (o *outliers) retain(used func(group string) bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, g := range o.groups {
		if !used(k) {
			delete(o.groups, k)
			for _, h := range g.hosts {
				h.SetEjected(false)
			}
		}
	}
}

// run sweeps each detector at the end of its interval, until stop.
func (o *outliers) run() {
	defer o.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		o.mu.Lock()
		now := time.Now()
		next := now.Add(time.Hour)
		for _, g := range o.groups {
			if !now.Before(g.next) {
				for _, ch := range g.det.Sweep(now, nil) {
					if h := g.hosts[ch.Endpoint]; h != nil {
						h.SetEjected(ch.Eject)
					}
				}
				g.next = now.Add(g.det.Start(now))
			}
			if g.next.Before(next) {
				next = g.next
			}
		}
		o.mu.Unlock()
		timer.Reset(next.Sub(now))
		select {
		case <-timer.C:
		case <-o.wake:
		case <-o.done:
			return
		}
	}
}

// stop ends the timers and waits for the goroutine.
func (o *outliers) stop() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	close(o.done)
	o.mu.Unlock()
	o.wg.Wait()
}
