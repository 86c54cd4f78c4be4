// SPDX-License-Identifier: Apache-2.0

package server_test

import (
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3streampb "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/audit_loggers/stream/v3"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/testutil"
)

// TestNewGRPCServer_Errors checks the errors of NewGRPCServer: no client,
// a bootstrap without server_listener_resource_name_template (gRFC A36).
func TestNewGRPCServer_Errors(t *testing.T) {
	if _, err := server.NewGRPCServer(nil); err == nil {
		t.Error("NewGRPCServer(nil) succeeded")
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := server.NewGRPCServer(c); err == nil || !strings.Contains(err.Error(), "server_listener_resource_name_template") {
		t.Errorf("NewGRPCServer without a template: %v, want an error naming it", err)
	}
}

// TestGRPCServer_API checks the grpc.Server-like API: GetServiceInfo,
// RegisterService after Serve panics, Serve of a listener that is not
// TCP fails, Serve after Stop returns grpc.ErrServerStopped, Stop twice.
func TestGRPCServer_API(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	if _, ok := ts.srv.GetServiceInfo()["grpc.testing.TestService"]; !ok {
		t.Errorf("GetServiceInfo() = %v, want grpc.testing.TestService", ts.srv.GetServiceInfo())
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "after Serve") {
				t.Errorf("RegisterService after Serve: recovered %v, want a panic", r)
			}
		}()
		testgrpc.RegisterReconnectServiceServer(ts.srv, testgrpc.UnimplementedReconnectServiceServer{})
	}()

	unix, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	if err := ts.srv.Serve(unix); err == nil || !strings.Contains(err.Error(), "*net.TCPAddr") {
		t.Errorf("Serve(unix listener) = %v, want an error", err)
	}

	ts.srv.Stop()
	ts.srv.Stop()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.srv.Serve(lis); err != grpc.ErrServerStopped {
		t.Errorf("Serve after Stop = %v, want grpc.ErrServerStopped", err)
	}
}

// TestServer_AuditLogging checks audit logging end to end (gRFC A59,
// an RBAC filter whose audit_logging_options name the standard
// stdout logger logs each decision of ON_DENY_AND_ALLOW, with the
// client's SPIFFE ID, the filter's name and the matched policy.
func TestServer_AuditLogging(t *testing.T) {
	e := newEnv(t)
	var out testutil.LogBuffer
	ts := e.startServer(t, server.WithAuditLoggers(server.NewStdoutAuditLogger(&out)))
	rules := testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"allow-client": {e.mesh.ID("client")}})
	rules.AuditLoggingOptions = &v3rbacconfigpb.RBAC_AuditLoggingOptions{
		AuditCondition: v3rbacconfigpb.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW,
		LoggerConfigs: []*v3rbacconfigpb.RBAC_AuditLoggingOptions_AuditLoggerConfig{{
			AuditLogger: &v3corepb.TypedExtensionConfig{Name: "stdout", TypedConfig: testutil.MarshalAny(&v3streampb.StdoutAuditLog{})},
		}},
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts, mtlsChain(rules))}})
	ts.waitMode(t, server.ServingModeServing)

	if _, err := callReady(t, dial(t, ts.addr, e.clientTLS(e.mesh.Client))); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, dial(t, ts.addr, e.clientTLS(e.issue(t, e.mesh.ID("intruder")))))
	wantCode(t, err, codes.PermissionDenied)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`{"grpc_audit_log":{"rpc_method":"/grpc.testing.TestService/UnaryCall","principal":"spiffe://mesh.example/client","policy_name":"rbac","matched_rule":"allow-client","authorized":true,`,
		`{"grpc_audit_log":{"rpc_method":"/grpc.testing.TestService/UnaryCall","principal":"spiffe://mesh.example/intruder","policy_name":"rbac","matched_rule":"","authorized":false,`,
	}
	if len(lines) != len(want) {
		t.Fatalf("audit log:\n%s\nwant %d lines", out.String(), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("audit line %d:\n%s\nwant prefix\n%s", i, lines[i], want[i])
		}
	}
}
