// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/xdsresolver"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const (
	// defaultTestTimeout bounds waits for what must happen.
	defaultTestTimeout = 10 * time.Second
)

// backend is a real gRPC server on 127.0.0.1 serving the interop
// TestService, whose UnaryCall answers with the server's ID.
type backend struct {
	testgrpc.UnimplementedTestServiceServer
	id   string
	addr string // host:port
	port uint32
	// arrived and release, when not nil, hold each UnaryCall: it sends
	// on arrived, then waits for release to be closed (or the RPC's end).
	arrived chan struct{}
	release chan struct{}
	// served counts the UnaryCalls answered.
	served atomic.Int64
	// accepted and closed count the connections the backend accepted and
	// those of them that were closed.
	accepted, closed atomic.Int64
	connClosed       chan struct{} // cap 1: notified when closed changes
}

// countingListener counts the connections of b.
type countingListener struct {
	net.Listener
	b *backend
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.b.accepted.Add(1)
	return &countedConn{Conn: c, b: l.b}, nil
}

type countedConn struct {
	net.Conn
	b    *backend
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.b.closed.Add(1)
		select {
		case c.b.connClosed <- struct{}{}:
		default:
		}
	})
	return c.Conn.Close()
}

func (b *backend) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if b.arrived != nil {
		b.arrived <- struct{}{}
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b.served.Add(1)
	return &testgrpc.SimpleResponse{ServerId: b.id, Hostname: b.addr}, nil
}

// EmptyCall answers with the server's ID in the header "server-id".
func (b *backend) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs("server-id", b.id))
	return &testgrpc.Empty{}, nil
}

// StreamingInputCall reads every message, then answers with their total
// payload size.
func (b *backend) StreamingInputCall(st testgrpc.TestService_StreamingInputCallServer) error {
	var n int32
	for {
		req, err := st.Recv()
		if err != nil {
			if err == io.EOF {
				return st.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: n})
			}
			return err
		}
		n += int32(len(req.GetPayload().GetBody()))
	}
}

// startBackend starts a backend named id, stopped when the test ends.
func startBackend(t *testing.T, id string) *backend {
	return startBackendWith(t, &backend{id: id})
}

// startBackendWith starts b (its id, arrived and release set), stopped
// when the test ends.
func startBackendWith(t *testing.T, b *backend) *backend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	b.addr, b.port = lis.Addr().String(), uint32(lis.Addr().(*net.TCPAddr).Port)
	b.connClosed = make(chan struct{}, 1)
	serveOn(t, countingListener{Listener: lis, b: b}, b)
	return b
}

// serveOn serves svc on lis until the test ends.
func serveOn(t *testing.T, lis net.Listener, svc testgrpc.TestServiceServer) {
	s := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(s, svc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis) // returns when Stop is called
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
}

// env is a management server and an xDS client using it.
type env struct {
	ms     *testutil.ManagementServer
	client *client.Client
}

// newEnv starts a management server and a client whose bootstrap is
// edited by editBootstrap, if not nil. Both are stopped when the test
// ends, after the ClientConns made by dial.
func newEnv(t *testing.T, bopts testutil.BootstrapOptions, editBootstrap func(map[string]any)) *env {
	t.Helper()
	return newEnvOn(t, testutil.NewManagementServer(t, testutil.ServerOptions{}), bopts, editBootstrap)
}

// newEnvOn is newEnv on the management server ms.
func newEnvOn(t *testing.T, ms *testutil.ManagementServer, bopts testutil.BootstrapOptions, editBootstrap func(map[string]any)) *env {
	t.Helper()
	raw := ms.Bootstrap(bopts)
	if editBootstrap != nil {
		raw = editJSON(t, raw, editBootstrap)
	}
	cfg, err := bootstrap.Parse(raw)
	if err != nil {
		t.Fatalf("bootstrap.Parse: %v", err)
	}
	c, err := client.New(cfg, client.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(c.Close)
	return &env{ms: ms, client: c}
}

// dial returns a TestService client for target through a resolver built
// with opts, and its ClientConn, closed when the test ends.
func (e *env) dial(t *testing.T, target string, opts ...xdsresolver.Option) (testgrpc.TestServiceClient, *grpc.ClientConn) {
	t.Helper()
	opts = append([]xdsresolver.Option{xdsresolver.WithLogger(testLogger(t))}, opts...)
	cc, err := grpc.NewClient(target,
		grpc.WithResolvers(xdsresolver.NewBuilder(e.client, opts...)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient(%q): %v", target, err)
	}
	t.Cleanup(func() { cc.Close() })
	return testgrpc.NewTestServiceClient(cc), cc
}

// testLogger logs to t at Debug, until the test ends.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// unaryServerID makes one RPC and returns the ID of the server that
// answered.
func unaryServerID(ctx context.Context, tc testgrpc.TestServiceClient) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{FillServerId: true})
	if err != nil {
		return "", err
	}
	return resp.GetServerId(), nil
}

// waitForServer makes RPCs until one is answered by the server id, and
// returns an error describing the last RPC when ctx ends first.
func waitForServer(ctx context.Context, tc testgrpc.TestServiceClient, id string) error {
	var last string
	for ctx.Err() == nil {
		got, err := unaryServerID(ctx, tc)
		if err == nil && got == id {
			return nil
		}
		last = fmt.Sprintf("server %q, error %v", got, err)
	}
	return fmt.Errorf("no RPC reached server %q before the deadline; last RPC: %s", id, last)
}

// verifyServer makes n RPCs and checks that the server id answers each.
func verifyServer(ctx context.Context, tc testgrpc.TestServiceClient, id string, n int) error {
	for i := range n {
		got, err := unaryServerID(ctx, tc)
		if err != nil || got != id {
			return fmt.Errorf("RPC %d of %d: server %q, error %v; want server %q", i+1, n, got, err, id)
		}
	}
	return nil
}

// lbEndpoint returns an endpoint 127.0.0.1:port of health h.
func lbEndpoint(port uint32, h v3corepb.HealthStatus) *v3endpointpb.LbEndpoint {
	return &v3endpointpb.LbEndpoint{
		HostIdentifier: &v3endpointpb.LbEndpoint_Endpoint{Endpoint: &v3endpointpb.Endpoint{
			Address: &v3corepb.Address{Address: &v3corepb.Address_SocketAddress{SocketAddress: &v3corepb.SocketAddress{
				Address:       "127.0.0.1",
				PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: port},
			}}},
		}},
		HealthStatus: h,
	}
}

// localityEndpoints returns a locality named zone of priority prio.
func localityEndpoints(zone string, prio uint32, eps ...*v3endpointpb.LbEndpoint) *v3endpointpb.LocalityLbEndpoints {
	return &v3endpointpb.LocalityLbEndpoints{
		Locality:            &v3corepb.Locality{Region: "r", Zone: zone},
		LbEndpoints:         eps,
		LoadBalancingWeight: wrapperspb.UInt32(1),
		Priority:            prio,
	}
}

// chain is testutil.Chain for the listener "svc" with one endpoint per
// backend.
func chain(bs ...*backend) testutil.Resources {
	ports := make([]uint32, len(bs))
	for i, b := range bs {
		ports[i] = b.port
	}
	return testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: ports})
}

// editJSON decodes the JSON object raw, lets edit change it, and encodes
// it again.
func editJSON(t *testing.T, raw []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	return out
}
