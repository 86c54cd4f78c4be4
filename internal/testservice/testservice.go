// SPDX-License-Identifier: Apache-2.0

// Package testservice is the grpc.testing.TestService that the backends of
// xdsctl demo and of the tests serve (testutil.StartBackend,
// internal/xdsbackend): its UnaryCall tells the caller which backend
// answered and who the caller is.
package testservice

import (
	"context"

	"google.golang.org/grpc/credentials"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
)

// New returns a grpc.testing.TestService whose UnaryCall answers with id
// (server_id), address (hostname) and the SPIFFE ID of the client
// certificate the connection was made with (username; "" without one).
// Its other methods are unimplemented. It is safe for concurrent use.
func New(id, address string) testgrpc.TestServiceServer {
	return &service{id: id, address: address}
}

type service struct {
	testgrpc.UnimplementedTestServiceServer
	id, address string
}

// UnaryCall answers with the backend's ID and address and the client's
// SPIFFE ID.
func (s *service) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	resp := &testgrpc.SimpleResponse{ServerId: s.id, Hostname: s.address}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && info.SPIFFEID != nil {
			resp.Username = info.SPIFFEID.String()
		}
	}
	return resp, nil
}
