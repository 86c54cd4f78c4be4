// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// faultMessage is the message of the status of an injected abort.
const faultMessage = "RPC terminated due to fault injection"

// injectFault runs fault f for one RPC with headers h (gRFC A33,
// dataplane.InjectFault) and returns the status that ends the RPC, or nil
// to let it proceed: the abort's code (an HTTP status mapped as gRPC maps
// responses without grpc-status), or the status of ctx's end during the
// delay. release must be called when the RPC ends.
func injectFault(ctx context.Context, f *resources.HTTPFault, h *routing.Headers) (release func(), err error) {
	abort, release, err := dataplane.InjectFault(ctx, f, h)
	switch {
	case err != nil:
		return release, status.FromContextError(err).Err()
	case abort == nil:
		return release, nil
	case abort.GRPC:
		return release, status.Error(codes.Code(abort.Code), faultMessage)
	}
	return release, status.Error(httpToGRPC(abort.Code), faultMessage)
}

// httpToGRPC maps an HTTP status to a gRPC code as gRPC does for
// responses without grpc-status (and gRFC A33 for http_status aborts).
func httpToGRPC(h uint32) codes.Code {
	switch h {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}
