// SPDX-License-Identifier: Apache-2.0

package testutil_test

import (
	"context"
	"testing"
	"time"

	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// defaultTestTimeout bounds waits for things that must happen.
const defaultTestTimeout = 10 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}
