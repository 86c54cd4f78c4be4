// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"time"

	"github.com/proxyless/xds/resources"
)

// Consecutive-failure ejection: Envoy's consecutive_5xx and
// consecutive_gateway_failure (docs/http.md, "Outlier detection"), which
// gRPC ignores and the HTTP data path runs. Unlike the algorithms of gRFC
// A50, which run at the end of each interval, they eject an endpoint at
// the failure that reaches the threshold; the ejection then ends at an
// interval's sweep as the others do, and counts against
// max_ejection_percent with them.

// ConsecutiveActive reports whether od ejects on consecutive failures
// (either kind set), which the HTTP data path runs.
func ConsecutiveActive(od *resources.OutlierDetection) bool {
	return od != nil && (od.Consecutive5xx != nil || od.ConsecutiveGatewayFailure != nil)
}

// RecordConsecutive counts the result of one HTTP request to e for the
// consecutive-failure ejection of d's config, and returns the ejection it
// causes, appended to changes: status is the response status (0 when
// there was no response), local that the request failed without one
// (connection failure, reset, timeout), which Envoy's non-split mode
// counts as a 5xx and a gateway failure. A result that is not a failure
// of a kind resets that kind's count. The caller holds the lock of d's
// owner.
func (d *OutlierDetector) RecordConsecutive(e *OutlierEndpoint, status int, local bool, now time.Time, changes []OutlierChange) []OutlierChange {
	is5xx := local || status >= 500
	isGateway := local || status == 502 || status == 503 || status == 504
	if c := d.cfg.Consecutive5xx; c != nil {
		changes = d.consecutive(e, &e.consecutive5xx, is5xx, c, "consecutive_5xx", now, changes)
	}
	if c := d.cfg.ConsecutiveGatewayFailure; c != nil {
		changes = d.consecutive(e, &e.consecutiveGateway, isGateway, c, "consecutive_gateway_failure", now, changes)
	}
	return changes
}

func (d *OutlierDetector) consecutive(e *OutlierEndpoint, count *uint32, failed bool, c *resources.ConsecutiveEjection, method string, now time.Time, changes []OutlierChange) []OutlierChange {
	if !failed {
		*count = 0
		return changes
	}
	if *count++; *count < c.Threshold {
		return changes
	}
	*count = 0
	return d.maybeEject(e, method, min(c.EnforcementPercentage, 100), now, changes)
}
