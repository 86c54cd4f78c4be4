// SPDX-License-Identifier: Apache-2.0

package server_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/testutil"
)

// End-to-end tests of the xDS-enabled server (gRFC A36, A29, A41; R-26):
// the testutil management server sends the server's Listener, a real
// grpc.Server serves loopback connections, and gRPC clients call it.

// plainListener is the Listener of ts with one plaintext chain and
// filters before the router.
func plainListener(ts *testServer, filters ...*v3listenerpb.FilterChain) *v3listenerpb.Listener {
	if len(filters) == 0 {
		filters = []*v3listenerpb.FilterChain{testutil.ServerFilterChain(testutil.FilterChainOptions{})}
	}
	return testutil.ServerListener(ts.name(), ts.addr, filters...)
}

// mtlsChain is a chain requiring a client certificate of the mesh, with
// the RBAC filter rules (nil: none).
func mtlsChain(rules *v3rbacconfigpb.RBAC) *v3listenerpb.FilterChain {
	o := testutil.FilterChainOptions{TLS: testutil.DownstreamTLS(testutil.DownstreamTLSOptions{
		IdentityInstance: "server", RootInstance: "server", RequireClientCertificate: true,
	})}
	if rules != nil {
		o.HTTPFilters = append(o.HTTPFilters, testutil.RBACFilter("rbac", rules))
	}
	return testutil.ServerFilterChain(o)
}

// TestServer_ServingModes checks the serving modes (gRFC A36, R-26.5):
//  1. before its Listener arrives, the server refuses RPCs;
//  2. the Listener arrives: SERVING, and RPCs succeed;
//  3. a NACKed update keeps the Listener: still SERVING;
//  4. the Listener is deleted: NOT_SERVING with a not-found error, and
//     RPCs fail;
//  5. it comes back: SERVING again.
func TestServer_ServingModes(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	tc := dial(t, ts.addr, insecure.NewCredentials())

	_, err := call(t, tc)
	wantCode(t, err, codes.Unavailable)

	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	if _, err := callReady(t, tc); err != nil {
		t.Fatalf("RPC while serving: %v", err)
	}

	bad := plainListener(ts)
	bad.UseOriginalDst = wrapperspb.Bool(true) // NACKed
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{bad}})
	ts.noModeChange(t)
	if _, err := call(t, tc); err != nil {
		t.Fatalf("RPC after a NACKed update: %v", err)
	}

	e.update(t, testutil.Resources{})
	mc := ts.waitMode(t, server.ServingModeNotServing)
	if !errors.Is(mc.err, client.ErrResourceNotFound) {
		t.Errorf("NOT_SERVING error = %v, want one wrapping client.ErrResourceNotFound", mc.err)
	}
	waitForCode(t, tc, codes.Unavailable)

	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	if _, err := callReady(t, tc); err != nil {
		t.Fatalf("RPC when serving again: %v", err)
	}
}

// TestServer_WrongListener checks that a Listener of another address, or
// a client-side Listener under the server's name, makes the server not
// serving, with the reason (gRFC A36, R-26.5).
func TestServer_WrongListener(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.ServerListener(ts.name(), "127.0.0.2:1", testutil.ServerFilterChain(testutil.FilterChainOptions{}))}})
	mc := ts.waitMode(t, server.ServingModeNotServing)
	if mc.err == nil || !strings.Contains(mc.err.Error(), "is not the listening address") {
		t.Errorf("NOT_SERVING error = %v, want one about the address", mc.err)
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener(ts.name(), "routes")}})
	mc = ts.waitMode(t, server.ServingModeNotServing)
	if mc.err == nil || !strings.Contains(mc.err.Error(), "client-side Listener") {
		t.Errorf("NOT_SERVING error = %v, want one about a client-side Listener", mc.err)
	}
}

// TestServer_MTLSAndRBAC checks server mTLS and RBAC by SPIFFE identity
// (gRFC A29, A41): the allowed identity succeeds, another gets
// PERMISSION_DENIED, a client without a certificate fails the handshake.
func TestServer_MTLSAndRBAC(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	allowed := e.mesh.ID("client")
	rules := testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"allow-client": {allowed}})
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts, mtlsChain(rules))}})
	ts.waitMode(t, server.ServingModeServing)

	resp, err := call(t, dial(t, ts.addr, e.clientTLS(e.mesh.Client)))
	if err != nil {
		t.Fatalf("RPC of the allowed identity: %v", err)
	}
	if resp.GetUsername() != allowed {
		t.Errorf("the server saw %q, want %q", resp.GetUsername(), allowed)
	}

	_, err = call(t, dial(t, ts.addr, e.clientTLS(e.issue(t, e.mesh.ID("intruder")))))
	wantCode(t, err, codes.PermissionDenied)

	_, err = call(t, dial(t, ts.addr, e.clientTLS(nil)))
	wantCode(t, err, codes.Unavailable)

	// A plaintext client cannot talk to a TLS chain either.
	_, err = call(t, dial(t, ts.addr, insecure.NewCredentials()))
	wantCode(t, err, codes.Unavailable)
}
