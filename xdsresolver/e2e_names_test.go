// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/proxyless/xds/testutil"
)

// TestResolver_E2E_BadTargetHurtsOnlyItsChannel checks that a channel whose
// target names a Listener that cannot be sent (not valid UTF-8) fails its
// own RPCs with UNAVAILABLE saying why, while the other channels built on
// the same client, already open or opened afterwards, keep working. On the
// old engine the name broke the client's ADS stream, and every channel of
// the client failed with "context canceled".
func TestResolver_E2E_BadTargetHurtsOnlyItsChannel(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", chain(a))
	good, _ := e.dial(t, "xds:///svc")
	if err := verifyServer(ctx, good, "A", 3); err != nil {
		t.Fatal(err)
	}

	bad, _ := e.dial(t, "xds:///svc%FF%FE")
	waitForFailure(ctx, t, func() error { _, err := unaryServerID(ctx, bad); return err }, codes.Unavailable, "not valid UTF-8")

	if err := verifyServer(ctx, good, "A", 3); err != nil {
		t.Fatalf("the good channel after the bad one: %v", err)
	}
	other, _ := e.dial(t, "xds:///svc")
	if err := verifyServer(ctx, other, "A", 3); err != nil {
		t.Fatalf("a new channel after the bad one: %v", err)
	}
}
