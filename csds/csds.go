// SPDX-License-Identifier: Apache-2.0

package csds

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/client"

	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// Server implements the CSDS service over a set of clients, which may
// change while it serves (Add). It is safe for concurrent use; each
// request reads every client's state with Dump, which does not block the
// clients' streams for long.
type Server struct {
	v3statuspb.UnimplementedClientStatusDiscoveryServiceServer

	mu sync.Mutex
	// Guarded by mu.
	entries []*entry // in the order they were added
}

// entry is one client served, with its scope.
type entry struct {
	scope string
	c     *client.Client
}

var _ v3statuspb.ClientStatusDiscoveryServiceServer = (*Server)(nil)

// NewServer returns a Server for clients (with no client_scope). Nil
// clients are skipped.
func NewServer(clients ...*client.Client) *Server {
	s := &Server{}
	for _, c := range clients {
		s.Add("", c)
	}
	return s
}

// Register creates a Server for clients and registers it on r (a
// *grpc.Server, usually), in one call. It returns the Server, to Add
// clients later. Like any registration it must happen before r serves.
func Register(r grpc.ServiceRegistrar, clients ...*client.Client) *Server {
	s := NewServer(clients...)
	v3statuspb.RegisterClientStatusDiscoveryServiceServer(r, s)
	return s
}

// Add makes s report c, with client_scope scope ("" for none; gRFC A71
// uses the data plane target, or "#server" for the server side), after
// the clients added before. The returned function removes it again
// (idempotent); a closed client that is not removed keeps being reported
// with its last state. A nil c is ignored.
func (s *Server) Add(scope string, c *client.Client) (remove func()) {
	if c == nil {
		return func() {}
	}
	e := &entry{scope: scope, c: c}
	s.mu.Lock()
	s.entries = append(s.entries, e)
	s.mu.Unlock()
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.entries {
			if x == e {
				s.entries = append(s.entries[:i], s.entries[i+1:]...)
				return
			}
		}
	})
}

// FetchClientStatus returns the status of every client. A request with
// node_matchers fails with codes.InvalidArgument: a client
// process serves only its own clients, so there is nothing to match.
// With exclude_resource_contents set, xds_config is left out.
func (s *Server) FetchClientStatus(_ context.Context, req *v3statuspb.ClientStatusRequest) (*v3statuspb.ClientStatusResponse, error) {
	return s.status(req)
}

// StreamClientStatus answers every request on the stream like
// FetchClientStatus, in order, until the client half-closes (the stream
// then ends with OK) or the stream fails. A request with node_matchers
// ends the stream with codes.InvalidArgument.
func (s *Server) StreamClientStatus(stream grpc.BidiStreamingServer[v3statuspb.ClientStatusRequest, v3statuspb.ClientStatusResponse]) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp, err := s.status(req)
		if err != nil {
			return err
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// status builds the response to req.
func (s *Server) status(req *v3statuspb.ClientStatusRequest) (*v3statuspb.ClientStatusResponse, error) {
	if len(req.GetNodeMatchers()) > 0 {
		return nil, status.Error(codes.InvalidArgument, "csds: node_matchers are not supported: this process serves the status of its own xDS clients only")
	}
	s.mu.Lock()
	entries := append([]*entry(nil), s.entries...)
	s.mu.Unlock()
	resp := &v3statuspb.ClientStatusResponse{Config: make([]*v3statuspb.ClientConfig, 0, len(entries))}
	for _, e := range entries {
		cfg := e.c.Dump()
		cfg.ClientScope = e.scope
		if req.GetExcludeResourceContents() {
			for _, g := range cfg.GetGenericXdsConfigs() {
				g.XdsConfig = nil
			}
		}
		resp.Config = append(resp.Config, cfg)
	}
	return resp, nil
}
