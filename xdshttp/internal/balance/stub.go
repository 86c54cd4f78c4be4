// SPDX-License-Identifier: Apache-2.0

// Package balance: TEMPORARY stub of the httplb branch's API (round robin
// over the first priority), so that the Transport builds before httplb
// lands. Deleted when httplb is merged.
package balance

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
)

type Host struct {
	ejected  atomic.Bool
	inFlight atomic.Int64
}

func (h *Host) Ejected() bool     { return h.ejected.Load() }
func (h *Host) SetEjected(b bool) { h.ejected.Store(b) }
func (h *Host) Begin()            { h.inFlight.Add(1) }
func (h *Host) End()              { h.inFlight.Add(-1) }
func (h *Host) InFlight() int64   { return h.inFlight.Load() }

func Policy(p resources.LBPolicy) (any, error) { return nil, nil }

type Cluster struct {
	name  string
	picks []Pick
	next  atomic.Uint64
}

func New(c *dataplane.Cluster, host func(e *dataplane.Endpoint) *Host) *Cluster {
	out := &Cluster{name: c.Name}
	if len(c.Priorities) > 0 {
		p := c.Priorities[0]
		for li := range p.Localities {
			l := &p.Localities[li]
			for ei := range l.Endpoints {
				e := &l.Endpoints[ei]
				out.picks = append(out.picks, Pick{Priority: p, Locality: l, Endpoint: e, Host: host(e)})
			}
		}
	}
	return out
}

type Request struct {
	Hash    uint64
	HasHash bool
}

type Pick struct {
	Priority *dataplane.Priority
	Locality *dataplane.Locality
	Endpoint *dataplane.Endpoint
	Host     *Host
}

func (c *Cluster) Pick(r Request) (Pick, error) {
	n := len(c.picks)
	for range n {
		p := c.picks[c.next.Add(1)%uint64(n)]
		if !p.Host.Ejected() {
			return p, nil
		}
	}
	return Pick{}, fmt.Errorf("cluster %q: %w", c.name, ErrNoHealthyEndpoint)
}

var ErrNoHealthyEndpoint = errors.New("no healthy endpoint")
