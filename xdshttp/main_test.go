// SPDX-License-Identifier: Apache-2.0

package xdshttp_test

import (
	"testing"

	"github.com/proxyless/xds/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
