// SPDX-License-Identifier: Apache-2.0

package client

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/proxyless/xds/resources"

	v3adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// Dump returns the client's view of every watched resource, as a CSDS
// ClientConfig (gRFC A40, R-20): the node, and one generic_xds_configs
// entry per watched resource and per resource received through a
// wildcard (WatchAll), ordered by type (registry order) then name, with
// type_url, name, version_info (of the cached value: the response's
// version_info in SotW, the resource's own version in delta), xds_config (the
// cached resource, if any), last_updated, client_status (REQUESTED,
// DOES_NOT_EXIST, ACKED, NACKED or RECEIVED_ERROR) and, after a NACK,
// error_state (details, the rejected version_info, last_update_attempt),
// or after an error the management server reported for the resource
// error_state with its details and last_update_attempt. The result is a fresh
// copy the caller owns. Dump is safe for concurrent use.
func (c *Client) Dump() *v3statuspb.ClientConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := &v3statuspb.ClientConfig{Node: proto.Clone(c.node).(*v3corepb.Node)}
	for _, t := range c.registry.Types() {
		for _, e := range c.sortedEntriesLocked(t.TypeURL()) {
			g := &v3statuspb.ClientConfig_GenericXdsConfig{
				TypeUrl:      t.TypeURL(),
				Name:         e.name,
				VersionInfo:  e.version,
				ClientStatus: e.status(),
			}
			if e.value != nil {
				g.XdsConfig = &anypb.Any{TypeUrl: t.TypeURL(), Value: []byte(e.raw)}
				g.LastUpdated = timestamppb.New(e.updated())
			}
			x := e.ext()
			switch {
			case x.serverErr != nil:
				g.ErrorState = &v3adminpb.UpdateFailureState{
					LastUpdateAttempt: timestamppb.New(x.serverErr.time),
					Details:           x.serverErr.err.Error(),
				}
			case e.stale():
				g.ErrorState = &v3adminpb.UpdateFailureState{Details: c.staleError(e).Error()}
			case x.nack != nil:
				g.ErrorState = &v3adminpb.UpdateFailureState{
					LastUpdateAttempt: timestamppb.New(x.nack.time),
					Details:           x.nack.err.Error(),
					VersionInfo:       x.nack.version,
				}
			}
			cc.GenericXdsConfigs = append(cc.GenericXdsConfigs, g)
		}
	}
	return cc
}

// ResourceVersion returns the version of the cached value of the resource
// of type typ named name (canonicalised like Watch's names): the
// version_info of the SotW response that last carried it valid, or its own
// version in delta; "" when nothing is cached for that name (not watched,
// not received yet, deleted, or never valid) or typ is nil. typ is the
// type a watch names (resources.ClusterType; any type of the same type URL
// finds the same resource). It is what Dump reports as version_info for
// the resource, found with two map lookups.
//
// The cached value is the one watchers were given last (or are about to
// be given); a SotW response that resends it unchanged moves its version
// on without calling the watchers. A watcher that needs the version of
// each value it is given must not read it here (the cache may have moved
// on by the time a queued delivery runs): WatchVersioned hands each value
// over with its version. It is safe for concurrent use.
func (c *Client) ResourceVersion(typ resources.ResourceType, name string) string {
	if typ == nil {
		return ""
	}
	name = resources.CanonicalName(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entryLocked(typ.TypeURL(), name)
	if e == nil || e.value == nil {
		return ""
	}
	return e.version
}
