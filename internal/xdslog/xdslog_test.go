// SPDX-License-Identifier: Apache-2.0

package xdslog_test

import (
	"testing"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/internal/xdslog"
)

// TestLevelTrace_Public checks that the level the module logs whole
// messages at is the one client.LevelTrace documents to users.
func TestLevelTrace_Public(t *testing.T) {
	if xdslog.LevelTrace != client.LevelTrace {
		t.Fatalf("xdslog.LevelTrace = %v, client.LevelTrace = %v; want them equal", xdslog.LevelTrace, client.LevelTrace)
	}
}
