// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/proxyless/xds/internal/backoff"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// dnsNode is the resolution of the host of LOGICAL_DNS clusters: a
// goroutine, owned by the Manager, that looks the host up, hands the result
// to dnsResult and waits for the next lookup (see the package doc, "LOGICAL_DNS
// clusters").
type dnsNode struct {
	// Initialized at creation time and read-only afterwards.
	m      *Manager
	key    string             // host:port
	host   string             // the name to look up
	port   string             // the port, in decimal
	cancel context.CancelFunc // stops the goroutine
	now    chan struct{}      // cap 1; ResolveNow wakes the goroutine

	// Guarded by m.mu.
	received bool                 // a lookup finished
	addrs    []string             // the addresses of value, "ip:port"
	value    *resources.Endpoints // the addresses as one endpoint; empty after a failure with none known
	note     error                // the failure, when value is empty because of it
	users    []*clusterNode       // the cluster nodes bound to it
}

// acquireDNSLocked returns the DNS node of host:port (key) with user among
// its users, starting its goroutine if needed.
func (m *Manager) acquireDNSLocked(key, host string, port uint32, user *clusterNode) *dnsNode {
	d := m.dns[key]
	if d == nil {
		ctx, cancel := context.WithCancel(m.ctx)
		d = &dnsNode{
			m:      m,
			key:    key,
			host:   host,
			port:   strconv.FormatUint(uint64(port), 10),
			cancel: cancel,
			now:    make(chan struct{}, 1),
		}
		m.dns[key] = d
		m.logger.Debug("resolving a LOGICAL_DNS host", xdslog.KeyResource, key)
		m.dnsWG.Add(1)
		go d.run(ctx)
	}
	d.users = append(d.users, user)
	return d
}

// releaseDNSLocked unbinds n from its DNS node, and stops that node's
// lookups when n was its last user.
func (m *Manager) releaseDNSLocked(n *clusterNode) {
	d := n.dns
	n.dns = nil
	if i := slices.Index(d.users, n); i >= 0 {
		d.users = slices.Delete(d.users, i, i+1)
	}
	if len(d.users) == 0 {
		m.logger.Debug("no longer resolving a LOGICAL_DNS host", xdslog.KeyResource, d.key)
		d.cancel()
		delete(m.dns, d.key)
	}
}

// dnsBackoff is the policy of the retries of failed lookups: the stream
// retry policy (1 s × 1.6ⁿ ± 20 %, R-11.1) capped at the refresh
// interval, which also caps the first delay.
func dnsBackoff(refresh time.Duration) backoff.Policy {
	p := backoff.Stream
	p.Max = refresh
	p.Initial = min(p.Initial, refresh)
	return p
}

// run looks the host up until ctx is done: again after the refresh
// interval when a lookup succeeded, after a growing delay (1 s × 1.6ⁿ
// ± 20 %, at most the refresh interval) when it failed, and at once when
// ResolveNow is called.
func (d *dnsNode) run(ctx context.Context) {
	defer d.m.dnsWG.Done()
	bo := dnsBackoff(d.m.opts.dnsRefresh).New()
	for {
		addrs, err := d.m.opts.dnsResolver.LookupHost(ctx, d.host)
		if ctx.Err() != nil {
			return
		}
		if err == nil && len(addrs) == 0 {
			err = errors.New("no addresses")
		}
		d.m.dnsResult(d, addrs, err)
		wait := d.m.opts.dnsRefresh
		if err != nil {
			wait = bo.NextBackOff()
		} else {
			bo.Reset()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-d.now:
			t.Stop()
		}
	}
}

// dnsResult records the outcome of a lookup of d. A failure after
// addresses were found keeps them, and is only logged; the same
// addresses again change nothing.
func (m *Manager) dnsResult(d *dnsNode, ips []string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.dns[d.key] != d {
		return
	}
	if err != nil {
		m.logger.Warn("DNS lookup failed", xdslog.KeyResource, d.key, xdslog.KeyError, err)
		note := m.errorf("resolving %s: %w", d.key, err)
		if d.received && (d.note == nil || sameError(d.note, note)) {
			return
		}
		d.received, d.addrs, d.value, d.note = true, nil, &resources.Endpoints{ClusterName: d.key}, note
	} else {
		addrs := make([]string, len(ips))
		for i, ip := range ips {
			addrs[i] = net.JoinHostPort(ip, d.port)
		}
		if d.received && d.note == nil && slices.Equal(d.addrs, addrs) {
			return
		}
		d.received, d.addrs, d.note = true, addrs, nil
		// One endpoint with every address (gRFC A61).
		d.value = &resources.Endpoints{
			ClusterName: d.key,
			Localities: []resources.Locality{{
				Weight:    1,
				Endpoints: []resources.Endpoint{{Addresses: addrs, Weight: 1}},
			}},
		}
	}
	m.endpointsChangedLocked(d.users)
}
