// SPDX-License-Identifier: Apache-2.0

package conformance_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/conformance"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// replaceStar replaces "*" in names with a plain name, as a server that
// takes the explicit wildcard for a resource name would read it.
func replaceStar(names []string) []string {
	out := slices.Clone(names)
	for i, n := range out {
		if n == "*" {
			out[i] = "star"
		}
	}
	return out
}

// isSubset reports whether names, of a request, names some but not all
// of the world's resources of a type.
func isSubset(names []string) bool {
	n := 0
	for _, name := range names {
		if name != "*" && !strings.HasPrefix(name, "xds-conformance-absent") {
			n++
		}
	}
	return n > 0 && n < worldSize
}

// foreign is a resource of another type than any response of the tests'
// server holds: a Node.
var foreign = testutil.MarshalAny(&v3corepb.Node{Id: "foreign"})

// padding makes a response larger than the limit of the size test.
const sizeLimit = 4096

var padding = &v3corepb.ControlPlane{Identifier: strings.Repeat("x", sizeLimit)}

// misbehaviours are the scripted servers: each breaks the rule of the
// checks it names, which must fail on every variant the misbehaviour
// touches (its hooks: SotW ones the SotW variants, delta ones the delta
// variants, REST ones REST) and the checks apply to.
var misbehaviours = []struct {
	name   string
	checks []string
	m      misbehaviour
	cfg    func(*conformance.Config)
}{{
	name:   "explicit wildcard taken for a name",
	checks: []string{"explicit_wildcard", "explicit_wildcard_with_names"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, _ *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			req.ResourceNames = replaceStar(req.GetResourceNames())
			return true
		},
		deltaReq: func(_ *proxyStream, _ *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			req.ResourceNamesSubscribe = replaceStar(req.GetResourceNamesSubscribe())
			return true
		},
		restReq: func(req *v3discoverypb.DiscoveryRequest) int {
			req.ResourceNames = replaceStar(req.GetResourceNames())
			return 0
		},
	},
}, {
	name:   "no legacy wildcard",
	checks: []string{"legacy_wildcard"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			if ts.requests == 0 && len(req.GetResourceNames()) == 0 {
				req.ResourceNames = []string{"nothing"}
			}
			return true
		},
		deltaReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			if ts.requests == 0 && len(req.GetResourceNamesSubscribe()) == 0 {
				req.ResourceNamesSubscribe = []string{"nothing"}
			}
			return true
		},
		restReq: func(req *v3discoverypb.DiscoveryRequest) int {
			if len(req.GetResourceNames()) == 0 {
				req.ResourceNames = []string{"nothing"}
			}
			return 0
		},
	},
}, {
	name:   "a subset answered with everything",
	checks: []string{"subset_subscription"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, _ *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			if len(req.GetResourceNames()) > 0 {
				req.ResourceNames = append([]string{"*"}, req.GetResourceNames()...)
			}
			return true
		},
		deltaReq: func(_ *proxyStream, _ *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			if len(req.GetResourceNamesSubscribe()) > 0 {
				req.ResourceNamesSubscribe = append([]string{"*"}, req.GetResourceNamesSubscribe()...)
			}
			return true
		},
		restReq: func(req *v3discoverypb.DiscoveryRequest) int {
			req.ResourceNames = append([]string{"*"}, req.GetResourceNames()...)
			return 0
		},
	},
}, {
	name:   "a NACKed response sent again",
	checks: []string{"nack_not_resent"},
	m: misbehaviour{
		sotwReq: func(ps *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			if req.GetErrorDetail() != nil && ts.lastSotW != nil {
				ps.injectLocked(proto.Clone(ts.lastSotW))
			}
			return true
		},
		deltaReq: func(ps *proxyStream, ts *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			if req.GetErrorDetail() != nil && ts.lastDelta != nil {
				ps.injectLocked(proto.Clone(ts.lastDelta))
			}
			return true
		},
	},
}, {
	name:   "unchanged resources not sent again",
	checks: []string{"resubscribe"},
	m: misbehaviour{
		sotwResp: func(_ *proxyStream, ts *proxyType, resp *v3discoverypb.DiscoveryResponse) bool {
			if len(resp.GetResources()) == 0 {
				return true
			}
			for _, a := range resp.GetResources() {
				if b, ok := ts.delivered[nameOf(a)]; !ok || string(b) != string(a.GetValue()) {
					return true
				}
			}
			return false
		},
		deltaResp: func(_ *proxyStream, ts *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool {
			resp.Resources = slices.DeleteFunc(resp.Resources, func(r *v3discoverypb.Resource) bool {
				return string(ts.delivered[r.GetName()]) == r.GetVersion()
			})
			return len(resp.GetResources())+len(resp.GetRemovedResources()) > 0
		},
	},
}, {
	name:   "unsubscribing a name under the wildcard ignored",
	checks: []string{"wildcard_name_unsubscribed"},
	m: misbehaviour{
		deltaReq: func(_ *proxyStream, _ *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			req.ResourceNamesUnsubscribe = slices.DeleteFunc(req.ResourceNamesUnsubscribe, func(n string) bool { return n != "*" })
			return len(req.GetResourceNamesSubscribe())+len(req.GetResourceNamesUnsubscribe()) > 0 || req.GetResponseNonce() != ""
		},
	},
}, {
	name:   "initial_resource_versions ignored",
	checks: []string{"initial_resource_versions"},
	m: misbehaviour{
		deltaReq: func(_ *proxyStream, _ *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			req.InitialResourceVersions = nil
			return true
		},
	},
}, {
	name:   "stale nonces honoured (SotW) or their requests dropped (delta)",
	checks: []string{"stale_nonce"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			req.ResponseNonce = ts.lastNonce()
			return true
		},
		deltaReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			return req.GetResponseNonce() == "" || req.GetResponseNonce() == ts.lastNonce()
		},
	},
}, {
	// As go-control-plane's SnapshotCache in ADS mode, a subset is never
	// answered, so stale_nonce takes its Config.Change path.
	name:   "stale nonces honoured, subsets never answered",
	checks: []string{"stale_nonce"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			req.ResponseNonce = ts.lastNonce()
			return !isSubset(req.GetResourceNames())
		},
	},
}, {
	name:   "a NACK ends the service of the type, subsets never answered",
	checks: []string{"nack_keeps_serving"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			return !ts.nacked && !isSubset(req.GetResourceNames())
		},
		sotwResp: func(_ *proxyStream, ts *proxyType, _ *v3discoverypb.DiscoveryResponse) bool {
			return !ts.nacked
		},
		deltaReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			return !ts.nacked && (ts.requests > 0 || !isSubset(req.GetResourceNamesSubscribe()))
		},
		deltaResp: func(_ *proxyStream, ts *proxyType, _ *v3discoverypb.DeltaDiscoveryResponse) bool {
			return !ts.nacked
		},
	},
}, {
	name:   "the first request of a type not answered",
	checks: []string{"first_request_answered"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, ts *proxyType, _ *v3discoverypb.DiscoveryRequest) bool {
			return ts.requests > 0
		},
		deltaReq: func(_ *proxyStream, ts *proxyType, _ *v3discoverypb.DeltaDiscoveryRequest) bool {
			return ts.requests > 0
		},
		restReq: func(req *v3discoverypb.DiscoveryRequest) int {
			if req.GetVersionInfo() == "" {
				return http.StatusNotModified
			}
			return 0
		},
	},
}, {
	name:   "an ACK answered with the version it ACKs",
	checks: []string{"ack_not_answered"},
	m: misbehaviour{
		sotwReq: func(ps *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			if last := ts.lastSotW; last != nil && req.GetErrorDetail() == nil && req.GetResponseNonce() == ts.lastNonce() && req.GetVersionInfo() == last.GetVersionInfo() {
				ps.injectLocked(proto.Clone(last))
			}
			return true
		},
		deltaReq: func(ps *proxyStream, ts *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			if last := ts.lastDelta; last != nil && req.GetErrorDetail() == nil && req.GetResponseNonce() == ts.lastNonce() && len(last.GetResources()) > 0 {
				ps.injectLocked(proto.Clone(last))
			}
			return true
		},
		restReq: func(req *v3discoverypb.DiscoveryRequest) int {
			req.VersionInfo = ""
			return 0
		},
	},
}, {
	name:   "a NACK ends the service of the type",
	checks: []string{"nack_keeps_serving"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, ts *proxyType, _ *v3discoverypb.DiscoveryRequest) bool {
			return !ts.nacked
		},
		deltaReq: func(_ *proxyStream, ts *proxyType, _ *v3discoverypb.DeltaDiscoveryRequest) bool {
			return !ts.nacked
		},
	},
}, {
	name:   "an empty list after names taken for the wildcard",
	checks: []string{"empty_list_after_names"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			if len(req.GetResourceNames()) == 0 && len(ts.everNamed) > 0 {
				req.ResourceNames = []string{"*"}
			}
			return true
		},
		deltaReq: func(_ *proxyStream, _ *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			if len(req.GetResourceNamesUnsubscribe()) > 0 && len(req.GetResourceNamesSubscribe()) == 0 {
				req.ResourceNamesSubscribe = []string{"*"}
			}
			return true
		},
	},
}, {
	name:   "names added later ignored",
	checks: []string{"subscribe_added_name"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			if ts.requests > 0 {
				req.ResourceNames = ts.names
			}
			return true
		},
		deltaReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			if ts.requests > 0 {
				req.ResourceNamesSubscribe = nil
			}
			return true
		},
	},
}, {
	name:   "unsubscriptions ignored",
	checks: []string{"unsubscribe"},
	m: misbehaviour{
		sotwReq: func(_ *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool {
			for _, n := range ts.everNamed {
				if !slices.Contains(req.GetResourceNames(), n) {
					req.ResourceNames = append(req.ResourceNames, n)
				}
			}
			return true
		},
		deltaReq: func(_ *proxyStream, _ *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool {
			req.ResourceNamesUnsubscribe = nil
			return len(req.GetResourceNamesSubscribe()) > 0 || req.GetResponseNonce() != ""
		},
	},
}, {
	name:   "changes not pushed",
	checks: []string{"update_pushed"},
	m: misbehaviour{
		sotwResp: func(_ *proxyStream, ts *proxyType, resp *v3discoverypb.DiscoveryResponse) bool {
			first, ok := ts.firstVersion[""]
			return !ok || first == resp.GetVersionInfo()
		},
		deltaResp: func(_ *proxyStream, ts *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool {
			resp.Resources = slices.DeleteFunc(resp.Resources, func(r *v3discoverypb.Resource) bool {
				first, ok := ts.firstVersion[r.GetName()]
				return ok && first != r.GetVersion()
			})
			return len(resp.GetResources())+len(resp.GetRemovedResources()) > 0
		},
		restReq: func(req *v3discoverypb.DiscoveryRequest) int {
			if req.GetVersionInfo() != "" {
				return http.StatusNotModified
			}
			return 0
		},
	},
}, {
	name:   "deletions hidden",
	checks: []string{"resource_deleted"},
	m: misbehaviour{
		sotwResp: func(_ *proxyStream, ts *proxyType, resp *v3discoverypb.DiscoveryResponse) bool {
			if resp.GetTypeUrl() != resources.ClusterTypeURL && resp.GetTypeUrl() != resources.ListenerTypeURL {
				return true
			}
			for name, a := range ts.seen {
				if slices.Contains(ts.names, name) && !slices.ContainsFunc(resp.GetResources(), func(b *anypb.Any) bool { return nameOf(b) == name }) {
					resp.Resources = append(resp.Resources, a)
				}
			}
			return true
		},
		deltaResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool {
			resp.RemovedResources = nil
			return len(resp.GetResources()) > 0
		},
		restReq: func(req *v3discoverypb.DiscoveryRequest) int {
			if req.GetVersionInfo() != "" {
				req.VersionInfo = "stale"
			}
			return 0
		},
		restResp: func(resp *v3discoverypb.DiscoveryResponse) {
			if !slices.ContainsFunc(resp.GetResources(), func(a *anypb.Any) bool { return nameOf(a) == "c0" }) && resp.GetTypeUrl() == resources.ClusterTypeURL {
				resp.Resources = append(resp.Resources, testutil.MarshalAny(testutil.Cluster("c0", "")))
			}
		},
	},
}, {
	name:   "missing resources not reported",
	checks: []string{"missing_resource_reported"},
	m: misbehaviour{
		deltaResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool {
			resp.RemovedResources = nil
			return len(resp.GetResources()) > 0
		},
	},
}, {
	name:   "system_version_info never changes",
	checks: []string{"system_version_info"},
	m: misbehaviour{
		deltaResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool {
			resp.SystemVersionInfo = "1"
			return true
		},
	},
}, {
	name:   "responses without a nonce",
	checks: []string{"response_nonce"},
	m: misbehaviour{
		sotwResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DiscoveryResponse) bool {
			resp.Nonce = ""
			return true
		},
		deltaResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool {
			resp.Nonce = ""
			return true
		},
	},
}, {
	name:   "a resource of another type in responses",
	checks: []string{"response_type"},
	m: misbehaviour{
		sotwResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DiscoveryResponse) bool {
			resp.Resources = append(resp.Resources, foreign)
			return true
		},
		deltaResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool {
			resp.Resources = append(resp.Resources, &v3discoverypb.Resource{Name: "foreign", Version: "1", Resource: foreign})
			return true
		},
		restResp: func(resp *v3discoverypb.DiscoveryResponse) {
			resp.Resources = append(resp.Resources, foreign)
		},
	},
}, {
	name:   "a resource twice in responses",
	checks: []string{"duplicate_names"},
	m: misbehaviour{
		sotwResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DiscoveryResponse) bool {
			if len(resp.GetResources()) > 0 {
				resp.Resources = append(resp.Resources, resp.Resources[0])
			}
			return true
		},
		deltaResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool {
			if len(resp.GetResources()) > 0 {
				resp.Resources = append(resp.Resources, resp.Resources[0])
			}
			return true
		},
		restResp: func(resp *v3discoverypb.DiscoveryResponse) {
			if len(resp.GetResources()) > 0 {
				resp.Resources = append(resp.Resources, resp.Resources[0])
			}
		},
	},
}, {
	name:   "responses above the size limit",
	checks: []string{"response_size"},
	m: misbehaviour{
		sotwResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DiscoveryResponse) bool {
			resp.ControlPlane = padding
			return true
		},
		deltaResp: func(_ *proxyStream, _ *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool {
			resp.ControlPlane = padding
			return true
		},
		restResp: func(resp *v3discoverypb.DiscoveryResponse) {
			resp.ControlPlane = padding
		},
	},
	cfg: func(c *conformance.Config) { c.MaxResponseBytes = sizeLimit },
}}

// touches returns the variants m changes.
func touches(m *misbehaviour) []conformance.Variant {
	var out []conformance.Variant
	if m.sotwReq != nil || m.sotwResp != nil {
		out = append(out, conformance.SotW, conformance.SotWPerType)
	}
	if m.deltaReq != nil || m.deltaResp != nil {
		out = append(out, conformance.Delta, conformance.DeltaPerType)
	}
	if m.restReq != nil || m.restResp != nil {
		out = append(out, conformance.REST)
	}
	return out
}

// TestMisbehaviours_FailTheirChecks runs each check against a server
// that breaks exactly its rule (testutil's server behind a proxy that
// misbehaves) and expects it to fail, on every variant the misbehaviour
// touches; TestTestutilServer_PassesEveryCheck sees each pass against the
// server itself.
func TestMisbehaviours_FailTheirChecks(t *testing.T) {
	for _, mb := range misbehaviours {
		t.Run(mb.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg, _ := inMemoryConfig(t, restMiddleware(&mb.m))
				cfg.Transport = &proxy{inner: cfg.Transport, m: &mb.m}
				// first_request_answered makes responses for the checks
				// of responses to judge.
				cfg.Checks = append(slices.Clone(mb.checks), "first_request_answered")
				if mb.cfg != nil {
					mb.cfg(&cfg)
				}
				rep, err := conformance.Check(t.Context(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				want := touches(&mb.m)
				for _, r := range rep.Results {
					if !slices.Contains(mb.checks, r.Check) || !slices.Contains(want, r.Variant) {
						continue
					}
					if r.Status != conformance.Fail {
						t.Errorf("%s/%s: %s (%s), want fail", r.Check, r.Variant, r.Status, r.Detail)
					} else {
						t.Logf("%s/%s: fail: %s", r.Check, r.Variant, r.Detail)
					}
				}
			})
		})
	}
}

// TestMisbehaviours_CoverEveryCheck checks that every check has, on every
// variant it applies to, a misbehaviour that must make it fail.
func TestMisbehaviours_CoverEveryCheck(t *testing.T) {
	for _, c := range conformance.Catalog() {
		for _, v := range c.Variants {
			covered := false
			for _, mb := range misbehaviours {
				covered = covered || slices.Contains(mb.checks, c.Name) && slices.Contains(touches(&mb.m), v)
			}
			if !covered {
				t.Errorf("%s/%s: no misbehaviour breaks it", c.Name, v)
			}
		}
	}
}
