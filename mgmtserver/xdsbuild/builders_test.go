// SPDX-License-Identifier: Apache-2.0

package xdsbuild_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/mgmtserver/xdsbuild"
	"github.com/proxyless/xds/resources"
)

// TestBuilders_DecodeWithoutError checks that every builder's output
// passes the client's validation, and what it decodes to.
func TestBuilders_DecodeWithoutError(t *testing.T) {
	t.Run("Listener", func(t *testing.T) {
		name, l, err := resources.ListenerType.DecodeTyped(xdsbuild.MarshalAny(xdsbuild.Listener("svc", "route-svc")))
		if err != nil {
			t.Fatal(err)
		}
		if name != "svc" || l.RouteConfigName != "route-svc" || l.InlineRouteConfig != nil || len(l.HTTPFilters) != 1 {
			t.Fatalf("Listener = %q %+v, want svc with RDS route-svc and the router", name, l)
		}
	})
	t.Run("ListenerInline", func(t *testing.T) {
		_, l, err := resources.ListenerType.DecodeTyped(xdsbuild.MarshalAny(xdsbuild.ListenerInline("svc", xdsbuild.RouteConfig("inline", "svc", "c"))))
		if err != nil {
			t.Fatal(err)
		}
		if l.RouteConfigName != "" || l.InlineRouteConfig == nil || l.InlineRouteConfig.VirtualHosts[0].Routes[0].Action.Cluster != "c" {
			t.Fatalf("Listener = %+v, want an inline route config to c", l)
		}
	})
	t.Run("RouteConfig", func(t *testing.T) {
		name, rc, err := resources.RouteConfigType.DecodeTyped(xdsbuild.MarshalAny(xdsbuild.RouteConfig("r", "*", "c")))
		if err != nil {
			t.Fatal(err)
		}
		if name != "r" || len(rc.VirtualHosts) != 1 || !slices.Equal(rc.VirtualHosts[0].Domains, []string{"*"}) ||
			len(rc.VirtualHosts[0].Routes) != 1 || rc.VirtualHosts[0].Routes[0].Action.Cluster != "c" {
			t.Fatalf("RouteConfig = %q %+v, want one virtual host for * routing to c", name, rc)
		}
	})
	for _, eds := range []string{"", "eds"} {
		t.Run("Cluster/eds="+eds, func(t *testing.T) {
			name, c, err := resources.ClusterType.DecodeTyped(xdsbuild.MarshalAny(xdsbuild.Cluster("c", eds)))
			if err != nil {
				t.Fatal(err)
			}
			if name != "c" || c.Kind != resources.ClusterKindEDS || c.EDSServiceName != eds {
				t.Fatalf("Cluster = %q %+v, want EDS with service name %q", name, c, eds)
			}
		})
	}
	t.Run("Endpoints", func(t *testing.T) {
		name, e, err := resources.EndpointsType.DecodeTyped(xdsbuild.MarshalAny(xdsbuild.Endpoints("e", "10.0.0.1", 80, 81)))
		if err != nil {
			t.Fatal(err)
		}
		if name != "e" || len(e.Localities) != 1 || e.Localities[0].Weight != 1 || e.Localities[0].Priority != 0 {
			t.Fatalf("Endpoints = %q %+v, want one locality of weight 1, priority 0", name, e)
		}
		var addrs []string
		for _, ep := range e.Localities[0].Endpoints {
			addrs = append(addrs, ep.Addresses...)
		}
		if !slices.Equal(addrs, []string{"10.0.0.1:80", "10.0.0.1:81"}) {
			t.Fatalf("addresses = %v, want 10.0.0.1:80, 10.0.0.1:81", addrs)
		}
	})
}

// TestBuilders_Chain checks Chain's names, defaults and builders.
func TestBuilders_Chain(t *testing.T) {
	c := xdsbuild.Chain(xdsbuild.ChainOptions{})
	checks := []struct {
		got, want proto.Message
	}{
		{c.Listeners[0], xdsbuild.Listener("svc", "route-svc")},
		{c.Routes[0], xdsbuild.RouteConfig("route-svc", "svc", "cluster-svc")},
		{c.Clusters[0], xdsbuild.Cluster("cluster-svc", "eds-svc")},
		{c.Endpoints[0], xdsbuild.Endpoints("eds-svc", "127.0.0.1", 8080)},
	}
	for _, ch := range checks {
		if !proto.Equal(ch.got, ch.want) {
			t.Errorf("Chain() has %v, want %v", ch.got, ch.want)
		}
	}
	if c.Version != "" || len(c.Listeners) != 1 || len(c.Routes) != 1 || len(c.Clusters) != 1 || len(c.Endpoints) != 1 || c.Other != nil {
		t.Errorf("Chain() = %+v, want one resource of each type and no version", c)
	}

	c = xdsbuild.Chain(xdsbuild.ChainOptions{Listener: "x", Host: "::1", Ports: []uint32{1, 2}})
	if !proto.Equal(c.Endpoints[0], xdsbuild.Endpoints("eds-x", "::1", 1, 2)) || c.Listeners[0].GetName() != "x" {
		t.Errorf("Chain(x) = %+v, want the x chain on [::1]:1 and :2", c)
	}
	for _, d := range []struct {
		typ resources.ResourceType
		msg proto.Message
	}{
		{resources.ListenerType, c.Listeners[0]},
		{resources.RouteConfigType, c.Routes[0]},
		{resources.ClusterType, c.Clusters[0]},
		{resources.EndpointsType, c.Endpoints[0]},
	} {
		if _, _, err := d.typ.Decode(xdsbuild.MarshalAny(d.msg)); err != nil {
			t.Errorf("%s of Chain(x) does not decode: %v", d.typ.TypeURL(), err)
		}
	}
}

// TestBuilders_MarshalAnyDeterministic checks that equal messages give
// equal Anys.
func TestBuilders_MarshalAnyDeterministic(t *testing.T) {
	a, b := xdsbuild.MarshalAny(xdsbuild.Endpoints("e", "h", 1, 2)), xdsbuild.MarshalAny(xdsbuild.Endpoints("e", "h", 1, 2))
	if !proto.Equal(a, b) {
		t.Fatal("MarshalAny of equal messages differs")
	}
}
