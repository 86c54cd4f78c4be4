// SPDX-License-Identifier: Apache-2.0

package resolver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/proxyless/xds/resolver"
	"github.com/proxyless/xds/testutil"
)

// TestResolver_E2E_DisableServiceConfig checks that a channel made with
// grpc.WithDisableServiceConfig fails its RPCs with an error that says
// the resolver needs service configs, rather than an opaque one.
//
//  1. Serve the chain with backend A.
//  2. Dial with grpc.WithDisableServiceConfig.
//  3. An RPC fails, its message naming ErrServiceConfigDisabled's text.
func TestResolver_E2E_DisableServiceConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", chain(a))
	cc, err := grpc.NewClient("xds:///svc",
		grpc.WithResolvers(resolver.NewBuilder(e.client, resolver.WithLogger(testLogger(t)))),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableServiceConfig())
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	defer cc.Close()
	_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err == nil || !strings.Contains(err.Error(), resolver.ErrServiceConfigDisabled.Error()) {
		t.Fatalf("RPC error = %v; want one containing %q", err, resolver.ErrServiceConfigDisabled)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RPC waited for its deadline: %v", err)
	}
}
