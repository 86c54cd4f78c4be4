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

// runKnownDefects runs the cells of knownDefects instead of skipping them:
//
//	go test ./testutil/transporttest/ -known-defects
var runKnownDefects = flag.Bool("known-defects", false, "run the cells listed in knownDefects instead of skipping them")

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

// knownDefects is TEMPORARY: the cells that fail today because of the
// defects of issue 21 §1, by variant, then cell ("Cell" or "Cell/Type"),
// with the defect. Remove an entry when its fix lands; run the cells with
// -known-defects to see which pass.
var knownDefects = map[string]map[string]string{
	"ADS_SotW":      adsDefects,
	"ADS_Delta":     adsDefects,
	"PerType_SotW":  perTypeDefects,
	"PerType_Delta": perTypeDefects,
	"REST": {
		transporttest.CellWildcard:         defectWildcardTransports,
		transporttest.CellWildcardAndNamed: defectWildcardTransports,
		transporttest.CellReconnectReplay:  defectWildcardTransports,
		transporttest.CellHostileNames:     defectHostileNames,
	},
	"File": {
		transporttest.CellWildcard:         defectWildcardTransports,
		transporttest.CellWildcardAndNamed: defectWildcardTransports,
		transporttest.CellReconnectReplay:  defectWildcardTransports,
		transporttest.CellHostileNames:     defectHostileNames,
		transporttest.CellOversize:         defectFileLimit,
	},
}

// adsDefects are the known defects of ADS, SotW and delta alike.
var adsDefects = map[string]string{
	"Wildcard/RouteConfiguration":            defectWildcardForm,
	"Wildcard/ClusterLoadAssignment":         defectWildcardForm,
	"WildcardAndNamed/RouteConfiguration":    defectWildcardForm,
	"WildcardAndNamed/ClusterLoadAssignment": defectWildcardForm,
	"ReconnectReplay/RouteConfiguration":     defectWildcardForm,
	"ReconnectReplay/ClusterLoadAssignment":  defectWildcardForm,
	transporttest.CellHostileNames:           defectHostileNames,
}

// perTypeDefects are the known defects of per-type streams, SotW and delta
// alike: those of ADS, and the replay of the wildcard after a reconnect.
var perTypeDefects = map[string]string{
	"Wildcard/RouteConfiguration":            defectWildcardForm,
	"Wildcard/ClusterLoadAssignment":         defectWildcardForm,
	"WildcardAndNamed/RouteConfiguration":    defectWildcardForm,
	"WildcardAndNamed/ClusterLoadAssignment": defectWildcardForm,
	transporttest.CellReconnectReplay:        defectWildcardTransports,
	transporttest.CellHostileNames:           defectHostileNames,
}

// The defects of issue 21 §1 that knownDefects cites.
const (
	defectHostileNames       = "issue 21 §1, one bad name stops every watch: a name that is not valid UTF-8 fails every request of the stream, and every watcher gets connection errors"
	defectWildcardTransports = "issue 21 §1, wildcards outside ADS: the engine sends the wildcard as an empty list; REST never polls it, the file transport takes only \"*\" for a wildcard, per-type replays nothing for it after a reconnect"
	defectWildcardForm       = "issue 21 §1, delta wildcard for RouteConfiguration and ClusterLoadAssignment: the legacy (empty) wildcard is sent for every type, in delta and SotW; the protocol defines it for Listener and Cluster only"
	defectFileLimit          = "issue 21 §1, file transport: no size limit, a file of any size is read and served"
)

func TestConformance(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			var opts []transporttest.Option
			if !*runKnownDefects {
				opts = append(opts, transporttest.Skip(knownDefects[v.name]))
			}
			transporttest.Run(t, v.h, opts...)
		})
	}
}
