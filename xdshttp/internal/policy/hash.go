// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"math/bits"
	"net/http"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// RequestHash returns the hash of an HTTP request for ring_hash from the
// route's hash policies (resources.RouteAction.HTTPHashPolicies; Envoy's
// RouteAction.HashPolicy, docs/http.md "Hash policies"): each policy that
// yields a value is hashed with XXH64 and combined as Envoy and gRPC
// combine them (the running hash rotated left by one bit, XORed with the
// new one), and a terminal policy that yields one ends the list:
//
//   - header: the header's values joined with "," (h, Envoy's view of the
//     request's headers), after the policy's regex_rewrite;
//   - cookie: the value of the request's cookie of that name (a cookie
//     Envoy would generate when absent is not: the policy yields nothing);
//   - connection_properties.source_ip: nodeID, the bootstrap's node ID (the
//     downstream of a proxyless client is the workload itself);
//   - query_parameter: the first value of the query parameter;
//   - filter_state and other kinds yield nothing.
//
// ok is false when no policy yields a value: the request gets a random
// hash. Safe for concurrent use.
func RequestHash(policies []resources.HashPolicy, h *routing.Headers, req *http.Request, nodeID string) (hash uint64, ok bool) {
	for i := range policies {
		hp := &policies[i]
		var v string
		var present bool
		switch hp.Kind {
		case resources.HashPolicyHeader:
			if v, present = h.Get(strings.ToLower(hp.HeaderName)); present && hp.RegexRewrite != nil {
				v = hp.RegexRewrite.ReplaceAllString(v, hp.RegexSubstitution)
			}
		case resources.HashPolicyCookie:
			if c, err := req.Cookie(hp.Name); err == nil {
				v, present = c.Value, true
			}
		case resources.HashPolicySourceIP:
			v, present = nodeID, true
		case resources.HashPolicyQueryParameter:
			if vs, found := req.URL.Query()[hp.Name]; found && len(vs) > 0 {
				v, present = vs[0], true
			}
		}
		if !present {
			continue
		}
		hash = bits.RotateLeft64(hash, 1) ^ xxhash.Sum64String(v)
		ok = true
		if hp.Terminal {
			break
		}
	}
	return hash, ok
}
