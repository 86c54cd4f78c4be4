// SPDX-License-Identifier: Apache-2.0

package mgmtserver_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const (
	// defaultTestTimeout bounds waits for things that must happen.
	defaultTestTimeout = 10 * time.Second
	// defaultTestShortTimeout bounds waits for things that must not happen.
	defaultTestShortTimeout = 50 * time.Millisecond
)

const (
	ldsURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	rdsURL = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	cdsURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	edsURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// forEachPath runs f as a subtest over gRPC and over the in-memory
// transport, with a server started with opts (InMemory set accordingly).
func forEachPath(t *testing.T, opts testutil.ServerOptions, f func(t *testing.T, ms *testutil.ManagementServer)) {
	for _, inMemory := range []bool{false, true} {
		name := "grpc"
		if inMemory {
			name = "in-memory"
		}
		t.Run(name, func(t *testing.T) {
			o := opts
			o.InMemory = inMemory
			f(t, testutil.NewManagementServer(t, o))
		})
	}
}

// rawStream is a raw ADS client stream to a ManagementServer, over gRPC or
// the in-memory transport. A goroutine reads responses into resps until
// the stream ends; it is stopped and waited for at cleanup.
type rawStream struct {
	t      *testing.T
	send   func(*v3discoverypb.DiscoveryRequest) error
	resps  chan *v3discoverypb.DiscoveryResponse // responses, in order
	ended  chan struct{}                         // closed when the reader returns; err is then set
	err    error                                 // the error that ended the stream
	cancel context.CancelFunc                    // cancels the stream's context
}

// newRawStream opens a stream; with read false, nothing reads it (a client
// that stopped reading).
func newRawStream(t *testing.T, ms *testutil.ManagementServer, read bool) *rawStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s := &rawStream{t: t, resps: make(chan *v3discoverypb.DiscoveryResponse, 1000), ended: make(chan struct{}), cancel: cancel}
	var recv func() (*v3discoverypb.DiscoveryResponse, error)
	var closeConn func()
	if ms.Address() == testutil.InMemoryAddress {
		tr, err := ms.Dialer().Dial(&bootstrap.ServerConfig{ServerURI: ms.Address()}, transport.BuildOptions{})
		if err != nil {
			t.Fatalf("Build() = %v", err)
		}
		st, err := tr.NewStream(ctx, transport.ADSMethod)
		if err != nil {
			t.Fatalf("NewStream() = %v", err)
		}
		s.send = func(req *v3discoverypb.DiscoveryRequest) error {
			b, err := proto.Marshal(req)
			if err != nil {
				return err
			}
			return st.Send(b)
		}
		recv = func() (*v3discoverypb.DiscoveryResponse, error) {
			b, err := st.Recv()
			if err != nil {
				return nil, err
			}
			resp := &v3discoverypb.DiscoveryResponse{}
			return resp, proto.Unmarshal(b, resp)
		}
		closeConn = tr.Close
	} else {
		cc, err := grpc.NewClient(ms.Address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatalf("grpc.NewClient() = %v", err)
		}
		st, err := v3discoverypb.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
		if err != nil {
			t.Fatalf("StreamAggregatedResources() = %v", err)
		}
		s.send, recv = st.Send, st.Recv
		closeConn = func() { cc.Close() }
	}
	if read {
		go func() {
			defer close(s.ended)
			for {
				resp, err := recv()
				if err != nil {
					s.err = err
					return
				}
				s.resps <- resp
			}
		}()
	} else {
		close(s.ended)
	}
	t.Cleanup(func() {
		cancel()
		<-s.ended
		closeConn()
	})
	return s
}

// request sends a DiscoveryRequest.
func (s *rawStream) request(typeURL, version, nonce string, names ...string) {
	s.t.Helper()
	s.requestWith(&v3discoverypb.DiscoveryRequest{TypeUrl: typeURL, VersionInfo: version, ResponseNonce: nonce, ResourceNames: names})
}

func (s *rawStream) requestWith(req *v3discoverypb.DiscoveryRequest) {
	s.t.Helper()
	if err := s.send(req); err != nil {
		s.t.Fatalf("Send(%v) = %v", req, err)
	}
}

// recv returns the next response, failing the test if none comes in time.
func (s *rawStream) recv(ctx context.Context) *v3discoverypb.DiscoveryResponse {
	s.t.Helper()
	select {
	case resp := <-s.resps:
		return resp
	case <-s.ended:
		select {
		case resp := <-s.resps:
			return resp
		default:
		}
		s.t.Fatalf("stream ended while waiting for a response: %v", s.err)
	case <-ctx.Done():
		s.t.Fatalf("timed out waiting for a response: %v", ctx.Err())
	}
	return nil
}

// wantNone fails the test if a response arrives within d.
func (s *rawStream) wantNone(d time.Duration) {
	s.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case resp := <-s.resps:
		s.t.Fatalf("unexpected response %v", resp)
	case <-timer.C:
	}
}

// endErr waits for the stream to end and returns its error.
func (s *rawStream) endErr(ctx context.Context) error {
	s.t.Helper()
	select {
	case <-s.ended:
		return s.err
	case <-ctx.Done():
		s.t.Fatalf("timed out waiting for the stream to end: %v", ctx.Err())
	}
	return nil
}

// ack sends the ACK of resp for names.
func (s *rawStream) ack(resp *v3discoverypb.DiscoveryResponse, names ...string) {
	s.t.Helper()
	s.request(resp.GetTypeUrl(), resp.GetVersionInfo(), resp.GetNonce(), names...)
}

// names returns the resource names of resp's resources, which must be
// Listeners or Clusters (or wrapped ones).
func names(t *testing.T, resp *v3discoverypb.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, a := range resp.GetResources() {
		if a.GetTypeUrl() == "type.googleapis.com/envoy.service.discovery.v3.Resource" {
			r := &v3discoverypb.Resource{}
			if err := a.UnmarshalTo(r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r.GetName())
			continue
		}
		switch a.GetTypeUrl() {
		case ldsURL:
			l := &v3listenerpb.Listener{}
			if err := a.UnmarshalTo(l); err != nil {
				t.Fatal(err)
			}
			out = append(out, l.GetName())
		case cdsURL:
			c := &v3clusterpb.Cluster{}
			if err := a.UnmarshalTo(c); err != nil {
				t.Fatal(err)
			}
			out = append(out, c.GetName())
		default:
			t.Fatalf("names: unexpected resource type %q", a.GetTypeUrl())
		}
	}
	return out
}

// wantResponse checks a response's type URL, version and resource names.
func wantResponse(t *testing.T, resp *v3discoverypb.DiscoveryResponse, typeURL, version string, wantNames ...string) {
	t.Helper()
	if resp.GetTypeUrl() != typeURL || resp.GetVersionInfo() != version || resp.GetNonce() == "" {
		t.Fatalf("response = {type %q, version %q, nonce %q}, want {type %q, version %q, a nonce}",
			resp.GetTypeUrl(), resp.GetVersionInfo(), resp.GetNonce(), typeURL, version)
	}
	if got := names(t, resp); !slices.Equal(got, wantNames) && !(len(got) == 0 && len(wantNames) == 0) {
		t.Fatalf("response resources = %v, want %v", got, wantNames)
	}
}

// clusters returns a snapshot of Clusters with the given names.
func clusters(version string, ns ...string) testutil.Resources {
	r := testutil.Resources{Version: version}
	for _, n := range ns {
		r.Clusters = append(r.Clusters, testutil.Cluster(n, ""))
	}
	return r
}
