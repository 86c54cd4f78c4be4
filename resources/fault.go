// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	v3faultcommonpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// HTTPFault is the config of a fault injection filter, or a per-route
// override of it (envoy.extensions.filters.http.fault.v3.HTTPFault, gRFC
// A33), decoded: a Listener's HTTPFilter and a FilterOverride hold one
// (their Fault field), so that no data path decodes the proto again.
type HTTPFault struct {
	// Headers are the header matchers a request must all match for the
	// fault to apply (headers); none: every request. They follow the
	// rules of route header matchers: an invalid one rejects the
	// resource.
	Headers []HeaderMatcher
	// Delay is the delay to inject; nil for none: delay unset, or set
	// without fixed_delay or header_delay.
	Delay *FaultDelay
	// Abort is the abort to inject; nil for none: abort unset, or set
	// without http_status, grpc_status or header_abort.
	Abort *FaultAbort
	// MaxActiveFaults is max_active_faults: at most this many requests
	// with an injected fault at once (0: no fault is injected); nil when
	// unset, for no limit. gRFC A33 counts the faults of the whole
	// process.
	MaxActiveFaults *uint32
}

// FaultPercentage is the share of requests a fault applies to, a
// FractionalPercent.
type FaultPercentage struct {
	// PerMillion is the share in parts per million, ≤ 1,000,000 (a
	// numerator larger than its denominator is capped at 100 %). Unset
	// is 0, as in gRPC.
	PerMillion uint32
	// Unit is the parts per million of one unit of the denominator:
	// 10,000 for HUNDRED (the default), 100 for TEN_THOUSAND, 1 for
	// MILLION. A percentage a request asks for in a header
	// (x-envoy-fault-*-percentage) is a numerator over the same
	// denominator.
	Unit uint32
}

// FaultDelay is a fault's delay (envoy.extensions.filters.common.fault.v3.FaultDelay).
type FaultDelay struct {
	// Fixed is fixed_delay, as received (a negative one delays
	// nothing); unused when FromHeader.
	Fixed time.Duration
	// FromHeader is header_delay: the request's
	// x-envoy-fault-delay-request header gives the delay, in
	// milliseconds; a request without it is not delayed.
	FromHeader bool
	// Percentage is the share of the requests delayed.
	Percentage FaultPercentage
}

// FaultAbortKind says what status a fault's abort ends a request with.
type FaultAbortKind int

const (
	// FaultAbortHTTPStatus: http_status, an HTTP status code (a gRPC data
	// path maps it to a gRPC code as gRPC maps responses without
	// grpc-status, gRFC A33).
	FaultAbortHTTPStatus FaultAbortKind = iota + 1
	// FaultAbortGRPCStatus: grpc_status, a gRPC status code.
	FaultAbortGRPCStatus
	// FaultAbortFromHeader: header_abort: the request's
	// x-envoy-fault-abort-grpc-request header (a gRPC code) or
	// x-envoy-fault-abort-request header (an HTTP status) gives the
	// status; a request without either is not aborted.
	FaultAbortFromHeader
)

// FaultAbort is a fault's abort (envoy.extensions.filters.http.fault.v3.FaultAbort).
type FaultAbort struct {
	Kind FaultAbortKind
	// Status is the HTTP status (FaultAbortHTTPStatus) or the gRPC code
	// (FaultAbortGRPCStatus) as received; 0 for FaultAbortFromHeader.
	Status uint32
	// Percentage is the share of the requests aborted.
	Percentage FaultPercentage
}

// faultImpl is the fault injection filter, which gRPC clients run (gRFC
// A33).
var faultImpl = &httpFilterImpl{
	client: true,
	parse: func(cfg *anypb.Any, typedStruct bool) (filterConfig, error) {
		f, err := decodeFault(cfg, typedStruct)
		return filterConfig{fault: f}, err
	},
	parseOverride: func(cfg *anypb.Any, typedStruct bool) (filterConfig, error) {
		f, err := decodeFault(cfg, typedStruct)
		return filterConfig{fault: f}, err
	},
}

// decodeFault decodes and validates an HTTPFault config or override;
// error fields are relative to it.
func decodeFault(cfg *anypb.Any, typedStruct bool) (*HTTPFault, error) {
	m := &v3faultpb.HTTPFault{}
	if err := unmarshalFilterConfig(cfg, typedStruct, m); err != nil {
		return nil, err
	}
	f := &HTTPFault{}
	for i, h := range m.GetHeaders() {
		hm, err := headerMatcherFromProto(h)
		if err != nil {
			return nil, withFieldPrefix(indexed("headers", i), err)
		}
		f.Headers = append(f.Headers, hm)
	}
	if d := m.GetDelay(); d != nil {
		delay := &FaultDelay{Percentage: faultPercentage(d.GetPercentage())}
		switch s := d.GetFaultDelaySecifier().(type) {
		case *v3faultcommonpb.FaultDelay_FixedDelay:
			delay.Fixed = s.FixedDelay.AsDuration()
			f.Delay = delay
		case *v3faultcommonpb.FaultDelay_HeaderDelay_:
			delay.FromHeader = true
			f.Delay = delay
		}
	}
	if a := m.GetAbort(); a != nil {
		abort := &FaultAbort{Percentage: faultPercentage(a.GetPercentage())}
		switch s := a.GetErrorType().(type) {
		case *v3faultpb.FaultAbort_GrpcStatus:
			abort.Kind, abort.Status = FaultAbortGRPCStatus, s.GrpcStatus
		case *v3faultpb.FaultAbort_HttpStatus:
			abort.Kind, abort.Status = FaultAbortHTTPStatus, s.HttpStatus
		case *v3faultpb.FaultAbort_HeaderAbort_:
			abort.Kind = FaultAbortFromHeader
		}
		if abort.Kind != 0 {
			f.Abort = abort
		}
	}
	if mx := m.GetMaxActiveFaults(); mx != nil {
		n := mx.GetValue()
		f.MaxActiveFaults = &n
	}
	return f, nil
}

// faultPercentage converts a FractionalPercent; an unknown denominator
// counts as HUNDRED, the default.
func faultPercentage(p *v3typepb.FractionalPercent) FaultPercentage {
	unit := uint32(10_000)
	switch p.GetDenominator() {
	case v3typepb.FractionalPercent_TEN_THOUSAND:
		unit = 100
	case v3typepb.FractionalPercent_MILLION:
		unit = 1
	}
	return FaultPercentage{PerMillion: uint32(min(uint64(p.GetNumerator())*uint64(unit), 1_000_000)), Unit: unit}
}
