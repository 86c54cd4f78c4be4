// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdshttp"
)

// cidr is a CidrRange of prefix/n.
func cidr(prefix string, n uint32) *v3corepb.CidrRange {
	return &v3corepb.CidrRange{AddressPrefix: prefix, PrefixLen: wrapperspb.UInt32(n)}
}

// taggedChain is a plaintext chain named name whose RBAC filter denies
// every request unless its :path is "/"+name: a request to "/"+name
// succeeds only on that chain, so that the answer tells the chain.
func taggedChain(name string, m *v3listenerpb.FilterChainMatch) *v3listenerpb.FilterChain {
	rules := &v3rbacconfigpb.RBAC{Action: v3rbacconfigpb.RBAC_ALLOW, Policies: map[string]*v3rbacconfigpb.Policy{"tag": {
		Permissions: []*v3rbacconfigpb.Permission{{Rule: &v3rbacconfigpb.Permission_Header{Header: exactHeaderMatcher(":path", "/"+name)}}},
		Principals:  []*v3rbacconfigpb.Principal{{Identifier: &v3rbacconfigpb.Principal_Any{Any: true}}},
	}}}
	return testutil.ServerFilterChain(testutil.FilterChainOptions{Name: name, Match: m, HTTPFilters: []*v3httppb.HttpFilter{testutil.RBACFilter("rbac", rules)}})
}

// clientFrom is an HTTP client whose connections come from the local IP
// src.
func clientFrom(t *testing.T, src string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestServer_FilterChainMatch checks the filter chain of each connection
// (gRFC A36, R-26.2; Envoy's order, most specific first): a server on
// 0.0.0.0 gets connections to 127.0.0.1 and 127.0.0.3 from 127.0.0.1
// and 127.0.0.2 (loopback addresses of Linux's 127/8); chains by
// destination prefix, then source type (loopback), then source prefix,
// without going back; the default chain gets none of them.
func TestServer_FilterChainMatch(t *testing.T) {
	for _, a := range []string{"127.0.0.2:0", "127.0.0.3:0"} {
		probe, err := net.Listen("tcp4", a)
		if err != nil {
			t.Skipf("%s is not a loopback address here: %v", a, err)
		}
		probe.Close()
	}
	e := newSrvEnv(t)
	lis, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := e.startServer(t, lis)
	port := lis.Addr().(*net.TCPAddr).Port
	l := ts.listener(
		taggedChain("dst3", &v3listenerpb.FilterChainMatch{PrefixRanges: []*v3corepb.CidrRange{cidr("127.0.0.3", 32)}}),
		taggedChain("src2", &v3listenerpb.FilterChainMatch{PrefixRanges: []*v3corepb.CidrRange{cidr("127.0.0.0", 8)}, SourceType: v3listenerpb.FilterChainMatch_SAME_IP_OR_LOOPBACK, SourcePrefixRanges: []*v3corepb.CidrRange{cidr("127.0.0.2", 32)}}),
		taggedChain("any-src", &v3listenerpb.FilterChainMatch{PrefixRanges: []*v3corepb.CidrRange{cidr("127.0.0.0", 8)}, SourcePrefixRanges: []*v3corepb.CidrRange{cidr("127.0.0.1", 32)}}),
		taggedChain("loopback", &v3listenerpb.FilterChainMatch{PrefixRanges: []*v3corepb.CidrRange{cidr("127.0.0.0", 8)}, SourceType: v3listenerpb.FilterChainMatch_SAME_IP_OR_LOOPBACK}),
	)
	l.DefaultFilterChain = taggedChain("default", nil)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{l}})
	ts.waitMode(t, xdshttp.ServingModeServing)

	for _, tc := range []struct {
		src, dst, chain string
	}{
		{"127.0.0.1", "127.0.0.3", "dst3"},     // the longest destination prefix first
		{"127.0.0.2", "127.0.0.1", "src2"},     // then the source type, then the longest source prefix
		{"127.0.0.1", "127.0.0.1", "loopback"}, // the source type before the source prefix of any-src
	} {
		hc := clientFrom(t, tc.src)
		url := "http://" + net.JoinHostPort(tc.dst, itoa(port)) + "/"
		mustGet(t, hc, url+tc.chain, http.StatusOK)
		for _, other := range []string{"dst3", "src2", "any-src", "loopback", "default"} {
			if other != tc.chain {
				mustGet(t, hc, url+other, http.StatusForbidden)
			}
		}
	}
	if bootstrap.ExpandTemplate(template, ts.addr) != ts.name() || ts.addr != "0.0.0.0:"+itoa(port) {
		t.Errorf("listening on %s, Listener %q", ts.addr, ts.name())
	}
}

// TestServer_IPv6ListenerName checks that a server listening on an IPv6
// address watches the Listener named with the address in brackets, as
// "[::1]:PORT" (gRFC A36), and serves it.
func TestServer_IPv6ListenerName(t *testing.T) {
	lis, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	e := newSrvEnv(t)
	ts := e.startServer(t, lis)
	port := lis.Addr().(*net.TCPAddr).Port
	want := bootstrap.ExpandTemplate(template, "[::1]:"+itoa(port))
	if _, err := e.ms.WaitForRequest(t.Context(), func(r *testutil.Request) bool {
		for _, n := range r.Req.GetResourceNames() {
			if n == want {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no request for Listener %q: %v", want, err)
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{ts.listener()}})
	ts.waitMode(t, xdshttp.ServingModeServing)
	mustGet(t, plainClient(t), "http://"+ts.addr+"/", http.StatusOK)
}

// TestServer_ListenAndServe checks the convenience: the Listener is named
// by the address the system gives.
func TestServer_ListenAndServe(t *testing.T) {
	e := newSrvEnv(t)
	srv, err := xdshttp.NewServer(e.c, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe("127.0.0.1:0") }()
	if _, err := e.ms.WaitForRequest(t.Context(), func(r *testutil.Request) bool {
		for _, n := range r.Req.GetResourceNames() {
			if strings.HasPrefix(n, bootstrap.ExpandTemplate(template, "127.0.0.1:")) {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != http.ErrServerClosed {
		t.Errorf("ListenAndServe() = %v after Shutdown, want http.ErrServerClosed", err)
	}
}
