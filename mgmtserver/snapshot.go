// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/resources"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Type URLs of the built-in resource types, in the order Update pushes
// them.
const (
	listenerTypeURL    = resources.ListenerTypeURL
	routeConfigTypeURL = resources.RouteConfigTypeURL
	clusterTypeURL     = resources.ClusterTypeURL
	endpointsTypeURL   = resources.EndpointsTypeURL
)

var builtinTypeURLs = []string{listenerTypeURL, routeConfigTypeURL, clusterTypeURL, endpointsTypeURL}

// Resources is a snapshot: every resource the server has for a node, and
// the version_info of all of them. Slices are in the order resources are
// sent. Update copies what it needs (it marshals the messages), so the
// caller may reuse a Resources value afterwards.
type Resources struct {
	// Version is the version_info of every response built from this
	// snapshot, for every type. "" means the value of a server-wide
	// counter that every Update increments: "1" after the first Update,
	// "2" after the second, and so on, whether or not their Version was
	// set.
	Version string

	Listeners []*v3listenerpb.Listener              // named by their name
	Routes    []*v3routepb.RouteConfiguration       // named by their name
	Clusters  []*v3clusterpb.Cluster                // named by their name
	Endpoints []*v3endpointpb.ClusterLoadAssignment // named by their cluster_name

	// Other are resources of custom types. The type URL of each is
	// "type.googleapis.com/" + the full name of its message.
	Other []NamedResource
}

// NamedResource is a resource of a custom type and its resource name.
type NamedResource struct {
	Name     string
	Resource proto.Message
}

// Each calls f with the name and message of every resource of r, in the
// order Update sends them. An Other entry without a Resource is not given
// to f; Each then returns an error naming it.
func (r *Resources) Each(f func(name string, m proto.Message)) error {
	for _, l := range r.Listeners {
		f(l.GetName(), l)
	}
	for _, rc := range r.Routes {
		f(rc.GetName(), rc)
	}
	for _, c := range r.Clusters {
		f(c.GetName(), c)
	}
	for _, e := range r.Endpoints {
		f(e.GetClusterName(), e)
	}
	var errs []error
	for i, o := range r.Other {
		if o.Resource == nil {
			errs = append(errs, fmt.Errorf("Resources.Other[%d] (%q) has no Resource", i, o.Name))
			continue
		}
		f(o.Name, o.Resource)
	}
	return errors.Join(errs...)
}

// snapshot is an immutable, marshalled Resources.
type snapshot struct {
	version    string
	resources  map[string][]namedAny // type URL → resources in Resources order
	otherTypes []string              // type URLs of Other, by first appearance
	delta      deltaView             // what delta streams send; built on first use
}

// namedAny is one resource ready to send.
type namedAny struct {
	name  string
	any   *anypb.Any // possibly a wrapped Resource; shared by responses, never modified
	inner *anypb.Any // the resource itself (any, unless wrapped): delta responses wrap it themselves
}

// Update sets the snapshot of the node nodeID; "" sets the default
// snapshot, used by every node without its own. Unless the server is
// Manual, every open stream whose node uses that snapshot then gets, for
// each type it subscribes to whose last response from a snapshot had
// another version_info, a response with the new version: in the order
// Listener, RouteConfiguration, Cluster, ClusterLoadAssignment, then
// custom types in order of first appearance in r.Other. A type the
// snapshot has no resource of is pushed too, with an empty list.
//
// A response to a request carries the snapshot resources the
// subscription asks for: all of them for a wildcard subscription, else
// the subscribed names the snapshot has. A stream gets a response of a
// type when its subscription to the type changes (to a non-empty one), or
// when it has not yet been sent this snapshot version for the type; a new
// stream therefore gets one for every type it requests. A NACK, or an ACK
// with unchanged names, gets no response. A SotW request whose
// response_nonce is stale (a response of its type was sent on the stream
// since the one it names) is ignored, its subscription included (xDS
// protocol, "Resource updates"). Versions, not contents, are compared:
// two Updates with the same explicit Version push nothing the second
// time.
//
// Delta streams get, instead, the resources whose bytes changed and the
// removed ones (see the package doc, "Delta").
//
// Update returns an error, and changes nothing, when a resource cannot
// be marshalled (a string field that is not UTF-8) or an Other entry has
// a nil Resource; the error names the resource.
func (ms *Server) Update(nodeID string, r Resources) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	version := r.Version
	if version == "" {
		version = strconv.FormatInt(ms.versionCounter+1, 10)
	}
	snap := &snapshot{version: version, resources: make(map[string][]namedAny)}
	var errs []error
	add := func(name string, m proto.Message) {
		inner, err := marshalAny(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("mgmtserver: Update: resource %q: %w", name, err))
			return
		}
		a := inner
		if ms.opts.WrapResources {
			if a, err = marshalAny(&v3discoverypb.Resource{Name: name, Version: version, Resource: inner}); err != nil {
				errs = append(errs, fmt.Errorf("mgmtserver: Update: wrapping resource %q: %w", name, err))
				return
			}
		}
		typeURL := inner.GetTypeUrl()
		if _, ok := snap.resources[typeURL]; !ok && !isBuiltin(typeURL) {
			snap.otherTypes = append(snap.otherTypes, typeURL)
		}
		snap.resources[typeURL] = append(snap.resources[typeURL], namedAny{name: name, any: a, inner: inner})
	}
	if err := r.Each(add); err != nil {
		errs = append(errs, fmt.Errorf("mgmtserver: Update: %w", err))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	ms.versionCounter++
	ms.snapshots[nodeID] = snap
	if ms.opts.Manual {
		return nil
	}
	// Streams of other nodes notice the version did not change.
	for _, s := range ms.streams {
		select {
		case s.snapshotChanged <- struct{}{}:
		default:
		}
	}
	for _, s := range ms.deltaStreams {
		select {
		case s.snapshotChanged <- struct{}{}:
		default:
		}
	}
	return nil
}

func isBuiltin(typeURL string) bool {
	for _, t := range builtinTypeURLs {
		if t == typeURL {
			return true
		}
	}
	return false
}

// snapshotFor returns the snapshot that serves nodeID, or nil if there is
// none.
func (ms *Server) snapshotFor(nodeID string) *snapshot {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if s, ok := ms.snapshots[nodeID]; ok {
		return s
	}
	return ms.snapshots[""]
}

// marshalAny packs m in an Any, marshalled deterministically, so that an
// unchanged resource keeps its bytes (and its delta version) across
// snapshots.
func marshalAny(m proto.Message) (*anypb.Any, error) {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		return nil, fmt.Errorf("mgmtserver: marshalling %T: %w", m, err)
	}
	return a, nil
}
