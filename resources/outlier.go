// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// OutlierDetection is the outlier detection config of a cluster (gRFC
// A50), with A50's defaults applied to unset fields.
type OutlierDetection struct {
	// Interval is the time between ejection sweeps; 10s by default.
	Interval time.Duration
	// BaseEjectionTime is the base time an endpoint stays ejected; 30s by
	// default.
	BaseEjectionTime time.Duration
	// MaxEjectionTime bounds the ejection time; 300s by default.
	MaxEjectionTime time.Duration
	// MaxEjectionPercent is the most endpoints, in percent, that may be
	// ejected at once, ≤ 100; 10 by default.
	MaxEjectionPercent uint32
	// SuccessRate is the success rate ejection algorithm; nil when
	// enforcing_success_rate is 0 (disabled).
	SuccessRate *SuccessRateEjection
	// FailurePercentage is the failure percentage ejection algorithm;
	// nil unless enforcing_failure_percentage is set and not 0.
	FailurePercentage *FailurePercentageEjection

	// The fields below are for HTTP data planes (R-17.7, Envoy's outlier
	// detection); gRPC ignores them (gRFC A50).

	// Consecutive5xx is consecutive_5xx with enforcing_consecutive_5xx:
	// by default 5 and 100, so on whenever outlier_detection is set, as
	// in Envoy; nil when either is 0.
	Consecutive5xx *ConsecutiveEjection
	// ConsecutiveGatewayFailure is consecutive_gateway_failure with
	// enforcing_consecutive_gateway_failure: by default 5 and 0, so nil
	// unless the enforcing percentage is set and not 0.
	ConsecutiveGatewayFailure *ConsecutiveEjection
}

// ConsecutiveEjection ejects an endpoint after a number of consecutive
// failures (Envoy's consecutive_5xx and consecutive_gateway_failure).
type ConsecutiveEjection struct {
	// Threshold is the number of consecutive failures, ≥ 1.
	Threshold uint32
	// EnforcementPercentage is the chance, in percent (1 to 100), that
	// reaching the threshold ejects. Values above 100, which gRPC does not
	// check, are read as 100.
	EnforcementPercentage uint32
}

// SuccessRateEjection configures success rate based ejection (gRFC A50).
type SuccessRateEjection struct {
	// StdevFactor is success_rate_stdev_factor, in thousandths; 1900 by
	// default.
	StdevFactor uint32
	// EnforcementPercentage is enforcing_success_rate, ≤ 100; 100 by
	// default.
	EnforcementPercentage uint32
	// MinimumHosts is success_rate_minimum_hosts; 5 by default.
	MinimumHosts uint32
	// RequestVolume is success_rate_request_volume; 100 by default.
	RequestVolume uint32
}

// FailurePercentageEjection configures failure percentage based ejection
// (gRFC A50).
type FailurePercentageEjection struct {
	// Threshold is failure_percentage_threshold, ≤ 100; 85 by default.
	Threshold uint32
	// EnforcementPercentage is enforcing_failure_percentage, 1 to 100.
	EnforcementPercentage uint32
	// MinimumHosts is failure_percentage_minimum_hosts; 5 by default.
	MinimumHosts uint32
	// RequestVolume is failure_percentage_request_volume; 50 by default.
	RequestVolume uint32
}

// outlierDetectionFromProto validates outlier_detection (R-17.4, gRFC
// A50): durations valid and not negative, percentages at most 100. It
// returns nil when od is nil. Error fields are relative to the Cluster.
func outlierDetectionFromProto(od *v3clusterpb.OutlierDetection) (*OutlierDetection, error) {
	if od == nil {
		return nil, nil
	}
	out := &OutlierDetection{
		Interval:           10 * time.Second,
		BaseEjectionTime:   30 * time.Second,
		MaxEjectionTime:    300 * time.Second,
		MaxEjectionPercent: 10,
	}
	const f = "outlier_detection."
	if err := optDuration(f+"interval", od.GetInterval(), &out.Interval); err != nil {
		return nil, err
	}
	if err := optDuration(f+"base_ejection_time", od.GetBaseEjectionTime(), &out.BaseEjectionTime); err != nil {
		return nil, err
	}
	if err := optDuration(f+"max_ejection_time", od.GetMaxEjectionTime(), &out.MaxEjectionTime); err != nil {
		return nil, err
	}
	percent := func(field string, v *wrapperspb.UInt32Value, def uint32) (uint32, error) {
		if v == nil {
			return def, nil
		}
		if v.GetValue() > 100 {
			return 0, invalid(f+field, "%d, must be at most 100", v.GetValue())
		}
		return v.GetValue(), nil
	}
	var err error
	if out.MaxEjectionPercent, err = percent("max_ejection_percent", od.GetMaxEjectionPercent(), 10); err != nil {
		return nil, err
	}
	srEnforce, err := percent("enforcing_success_rate", od.GetEnforcingSuccessRate(), 100)
	if err != nil {
		return nil, err
	}
	fpThreshold, err := percent("failure_percentage_threshold", od.GetFailurePercentageThreshold(), 85)
	if err != nil {
		return nil, err
	}
	fpEnforce, err := percent("enforcing_failure_percentage", od.GetEnforcingFailurePercentage(), 0)
	if err != nil {
		return nil, err
	}
	or := func(v *wrapperspb.UInt32Value, def uint32) uint32 {
		if v == nil {
			return def
		}
		return v.GetValue()
	}
	if srEnforce != 0 {
		out.SuccessRate = &SuccessRateEjection{
			StdevFactor:           or(od.GetSuccessRateStdevFactor(), 1900),
			EnforcementPercentage: srEnforce,
			MinimumHosts:          or(od.GetSuccessRateMinimumHosts(), 5),
			RequestVolume:         or(od.GetSuccessRateRequestVolume(), 100),
		}
	}
	consecutive := func(threshold, enforce *wrapperspb.UInt32Value, defEnforce uint32) *ConsecutiveEjection {
		t, e := or(threshold, 5), min(or(enforce, defEnforce), 100)
		if t == 0 || e == 0 {
			return nil
		}
		return &ConsecutiveEjection{Threshold: t, EnforcementPercentage: e}
	}
	out.Consecutive5xx = consecutive(od.GetConsecutive_5Xx(), od.GetEnforcingConsecutive_5Xx(), 100)
	out.ConsecutiveGatewayFailure = consecutive(od.GetConsecutiveGatewayFailure(), od.GetEnforcingConsecutiveGatewayFailure(), 0)
	if fpEnforce != 0 {
		out.FailurePercentage = &FailurePercentageEjection{
			Threshold:             fpThreshold,
			EnforcementPercentage: fpEnforce,
			MinimumHosts:          or(od.GetFailurePercentageMinimumHosts(), 5),
			RequestVolume:         or(od.GetFailurePercentageRequestVolume(), 50),
		}
	}
	return out, nil
}
