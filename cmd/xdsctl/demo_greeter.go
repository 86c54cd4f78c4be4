// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The demo's route splits /helloworld.Greeter/ 90/10, so its backends
// serve helloworld.Greeter, the service of grpc-go's
// examples/helloworld/helloworld.proto:
//
//	service Greeter { rpc SayHello (HelloRequest) returns (HelloReply) {} }
//	message HelloRequest { string name = 1; }
//	message HelloReply { string message = 1; }
//
// Both messages are one string field numbered 1, the wire form of
// google.protobuf.StringValue, so the service is declared here with
// wrapperspb.StringValue instead of generated code, which lives in
// grpc-go's examples module; grpc-go's helloworld client calls it as is.

// demoGreeterMethod is the full name of SayHello.
const demoGreeterMethod = "/helloworld.Greeter/SayHello"

// demoGreeterServer is the handler type of demoGreeterDesc.
type demoGreeterServer interface {
	SayHello(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error)
}

// demoGreeterDesc describes helloworld.Greeter as protoc-gen-go-grpc
// would.
var demoGreeterDesc = grpc.ServiceDesc{
	ServiceName: "helloworld.Greeter",
	HandlerType: (*demoGreeterServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "SayHello",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			req := new(wrapperspb.StringValue)
			if err := dec(req); err != nil {
				return nil, err
			}
			call := func(ctx context.Context, req any) (any, error) {
				return srv.(demoGreeterServer).SayHello(ctx, req.(*wrapperspb.StringValue))
			}
			if interceptor == nil {
				return call(ctx, req)
			}
			return interceptor(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: demoGreeterMethod}, call)
		},
	}},
	Metadata: "examples/helloworld/helloworld/helloworld.proto",
}

// demoGreeter is the demo backend id's helloworld.Greeter: SayHello
// answers "Hello NAME, from ID" and sends the header server-id: ID.
type demoGreeter struct{ id string }

func (g demoGreeter) SayHello(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	// The header fails only after the handler has sent headers.
	_ = grpc.SetHeader(ctx, metadata.Pairs("server-id", g.id))
	return wrapperspb.String("Hello " + req.GetValue() + ", from " + g.id), nil
}

// registerDemoGreeter registers the Greeter of backend id on s.
func registerDemoGreeter(s grpc.ServiceRegistrar, id string) {
	s.RegisterService(&demoGreeterDesc, demoGreeter{id: id})
}
