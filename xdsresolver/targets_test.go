// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// Tests of the target → Listener mapping (R-5.5, gRFC A47) and of Build.

// TestResolver_Targets_DefaultTemplate checks that xds:///svc names the
// Listener made from client_default_listener_resource_name_template, and
// that the virtual host is selected for "svc", not the Listener name.
//
//  1. Bootstrap with the template "listeners/%s".
//  2. Serve Listener "listeners/svc" → route-svc, whose only virtual host
//     has the domain "svc".
//  3. RPCs to xds:///svc, and to its short form xds:svc, reach A.
func TestResolver_Targets_DefaultTemplate(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, func(m map[string]any) {
		m["client_default_listener_resource_name_template"] = "listeners/%s"
	})
	r := chain(a)
	r.Listeners = []*v3listenerpb.Listener{testutil.Listener("listeners/svc", "route-svc")}
	e.ms.Update("", r)

	for _, target := range []string{"xds:///svc", "xds:svc"} {
		tc, _ := e.dial(t, target)
		if err := verifyServer(ctx, tc, "A", 3); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
	}
}

// TestResolver_Targets_Authority checks that xds://auth.example/svc names
// the Listener of that authority's template: by default
// xdstp://auth.example/envoy.config.listener.v3.Listener/svc.
func TestResolver_Targets_Authority(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{Authorities: map[string]string{"auth.example": ""}}, nil)
	r := chain(a)
	r.Listeners = []*v3listenerpb.Listener{testutil.Listener("xdstp://auth.example/envoy.config.listener.v3.Listener/svc", "route-svc")}
	e.ms.Update("", r)

	tc, _ := e.dial(t, "xds://auth.example/svc")
	if err := verifyServer(ctx, tc, "A", 3); err != nil {
		t.Fatal(err)
	}
}

// TestResolver_Targets_WithScheme checks that WithScheme serves another
// scheme, lowercased as grpc lowercases targets' schemes.
func TestResolver_Targets_WithScheme(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", chain(a))
	if got := xdsresolver.NewBuilder(e.client, xdsresolver.WithScheme("MyXDS")).Scheme(); got != "myxds" {
		t.Errorf("Scheme() = %q, want myxds", got)
	}
	if got := xdsresolver.NewBuilder(e.client).Scheme(); got != xdsresolver.DefaultScheme {
		t.Errorf("Scheme() = %q, want %q", got, xdsresolver.DefaultScheme)
	}

	tc, _ := e.dial(t, "myxds:///svc", xdsresolver.WithScheme("MyXDS"))
	if err := verifyServer(ctx, tc, "A", 3); err != nil {
		t.Fatal(err)
	}
}

// fakeClientConn is a resolver.ClientConn for Build tests that must
// not get as far as a State.
type fakeClientConn struct {
	resolver.ClientConn // nil: any other call panics
}

func (fakeClientConn) ParseServiceConfig(string) *serviceconfig.ParseResult {
	return &serviceconfig.ParseResult{}
}

func target(t *testing.T, s string) resolver.Target {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", s, err)
	}
	return resolver.Target{URL: *u}
}

// TestResolver_Build_Errors checks the targets and options Build rejects,
// and that an RPC on such a channel fails with the error.
func TestResolver_Build_Errors(t *testing.T) {
	e := newEnv(t, testutil.BootstrapOptions{Authorities: map[string]string{"auth.example": ""}}, nil)
	tests := []struct {
		name    string
		target  string
		opts    []xdsresolver.Option
		wantErr error
		want    string
	}{
		{
			name:    "unknown authority",
			target:  "xds://other.example/svc",
			wantErr: bootstrap.ErrUnknownAuthority,
			want:    `resolver: target "xds://other.example/svc": bootstrap: authority "other.example" is not in the bootstrap's authorities`,
		},
		{
			name:   "no name",
			target: "xds:///",
			want:   `resolver: target "xds:///" names no service: want xds:///name or xds://authority/name`,
		},
		{
			name:   "invalid ring hash header",
			target: "xds:///svc",
			opts:   []xdsresolver.Option{xdsresolver.WithRingHashRequestHashHeader("x-trace-bin")},
			want:   `resolver: WithRingHashRequestHashHeader: header name "x-trace-bin" is a binary header`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := xdsresolver.NewBuilder(e.client, tt.opts...).Build(target(t, tt.target), fakeClientConn{}, resolver.BuildOptions{})
			if err == nil {
				r.Close()
				t.Fatalf("Build(%q) succeeded, want an error", tt.target)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Build error %q does not wrap %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build error = %q, want it to contain %q", err, tt.want)
			}

			// The channel's RPCs fail with it.
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			tc, _ := e.dial(t, tt.target, tt.opts...)
			_, err = unaryServerID(ctx, tc)
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("RPC error = %v, want UNAVAILABLE containing %q", err, tt.want)
			}
		})
	}
}

// TestResolver_Build_NilClient checks that NewBuilder panics on a nil
// client, a programmer error.
func TestResolver_Build_NilClient(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewBuilder(nil) did not panic")
		}
	}()
	xdsresolver.NewBuilder(nil)
}

// TestResolver_Targets_AuthorityEncoded checks that the virtual host is
// selected for the channel's authority, as gRPC's xDS resolvers
// select it: the target's path percent-encoded as gRPC encodes a
// channel's default authority, or grpc.WithAuthority. It is grpc-go's
// TestClientSideFederationWithOnlyXDSTPStyleLDS, with a virtual host for
// the raw path beside the one for the encoded path.
//
//  1. Bootstrap with an xdstp:// default listener template; serve the
//     Listener ".../my-service-client-side-xds/2nd%20component".
//  2. Its RouteConfiguration has three virtual hosts: the domain
//     "my-service-client-side-xds%2F2nd%20component" → A, the raw path
//     "my-service-client-side-xds/2nd component" → B, "override.example"
//     → C.
//  3. RPCs to xds:///my-service-client-side-xds/2nd component reach A;
//     with grpc.WithAuthority("override.example"), C.
func TestResolver_Targets_AuthorityEncoded(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	const (
		authority = "traffic-manager.example"
		service   = "my-service-client-side-xds/2nd component"
	)
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	e := newEnv(t, testutil.BootstrapOptions{Authorities: map[string]string{authority: ""}}, func(m map[string]any) {
		m["client_default_listener_resource_name_template"] = "xdstp://" + authority + "/envoy.config.listener.v3.Listener/%s"
	})
	e.ms.Update("", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("xdstp://"+authority+"/envoy.config.listener.v3.Listener/my-service-client-side-xds/2nd%20component", "route-svc")},
		Routes: []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc",
			testutil.VirtualHost("encoded", []string{"my-service-client-side-xds%2F2nd%20component"}, testutil.ClusterRoute("", "cluster-a")),
			testutil.VirtualHost("raw", []string{service}, testutil.ClusterRoute("", "cluster-b")),
			testutil.VirtualHost("override", []string{"override.example"}, testutil.ClusterRoute("", "cluster-c")),
		)},
		Clusters: []*v3clusterpb.Cluster{testutil.Cluster("cluster-a", "eds-a"), testutil.Cluster("cluster-b", "eds-b"), testutil.Cluster("cluster-c", "eds-c")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{
			testutil.Endpoints("eds-a", "127.0.0.1", a.port), testutil.Endpoints("eds-b", "127.0.0.1", b.port), testutil.Endpoints("eds-c", "127.0.0.1", c.port),
		},
	})

	tc, _ := e.dial(t, "xds:///"+service)
	if err := verifyServer(ctx, tc, "A", 3); err != nil {
		t.Errorf("the target's path: %v", err)
	}
	cc, err := grpc.NewClient("xds:///"+service, append(xdsresolver.DialOptions(e.client, xdsresolver.WithLogger(testLogger(t))), grpc.WithAuthority("override.example"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := verifyServer(ctx, testgrpc.NewTestServiceClient(cc), "C", 3); err != nil {
		t.Errorf("grpc.WithAuthority: %v", err)
	}
}

// xdsLikeCreds are transport credentials that say they use xDS, as
// grpc-go's credentials/xds do.
type xdsLikeCreds struct {
	credentials.TransportCredentials
}

func (xdsLikeCreds) UsesXDS() bool { return true }

// TestResolver_Build_GRPCXDSCredentials checks that Build refuses a
// channel whose credentials are grpc-go's credentials/xds (they report
// UsesXDS), which would connect to every cluster with their fallback
// credentials; interop's TestSecurity_GRPCGoCredentialsRefused uses
// grpc-go's own.
func TestResolver_Build_GRPCXDSCredentials(t *testing.T) {
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r, err := xdsresolver.NewBuilder(e.client).Build(target(t, "xds:///svc"), fakeClientConn{}, resolver.BuildOptions{DialCreds: xdsLikeCreds{insecure.NewCredentials()}})
	if !errors.Is(err, xdsresolver.ErrGRPCXDSCredentials) || !strings.Contains(err.Error(), "xdscreds.NewClientCredentials") {
		if r != nil {
			r.Close()
		}
		t.Errorf("Build = %v; want ErrGRPCXDSCredentials naming xdscreds.NewClientCredentials", err)
	}
}
