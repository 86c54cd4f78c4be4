// SPDX-License-Identifier: Apache-2.0

package transporttest_test

import (
	"flag"
	"runtime"
	"strconv"
	"testing"

	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/testutil/transporttest"
)

// parallel is the default of -test.parallel here: the cells mostly wait
// (for the network and the client's backoff), so more of them run at
// once than the default, GOMAXPROCS.
const parallel = 8

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		if err := flag.Set("test.parallel", strconv.Itoa(max(parallel, runtime.GOMAXPROCS(0)))); err != nil {
			panic(err)
		}
	}
	leakcheck.VerifyTestMain(m)
}

// variants are the six ways of reaching a management server that this
// module provides.
var variants = []struct {
	name string
	h    transporttest.Harness
}{
	{"ADS_SotW", transporttest.ADSHarness(false)},
	{"ADS_Delta", transporttest.ADSHarness(true)},
	{"PerType_SotW", transporttest.PerTypeHarness(false)},
	{"PerType_Delta", transporttest.PerTypeHarness(true)},
	{"REST", transporttest.RESTHarness()},
	{"File", transporttest.FileHarness()},
}

func TestConformance(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			transporttest.Run(t, v.h)
		})
	}
}
