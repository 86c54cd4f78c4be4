// SPDX-License-Identifier: Apache-2.0

//lint:file-ignore SA1019 These tests build the deprecated header match forms gRPC still accepts (safe_regex_match).

package resources

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultcommonpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// TestHTTPFault checks the decoding of the fault injection filter's
// config (gRFC A33), in a Listener (HTTPFilter.Fault) and as an override
// (FilterOverride.Fault): delays and aborts of every kind, percentages
// over each denominator (capped at 100 %), max_active_faults, header
// matchers with the rules of route matchers, and what counts as no
// delay or no abort.
func TestHTTPFault(t *testing.T) {
	pct := func(n uint32, d v3typepb.FractionalPercent_DenominatorType) *v3typepb.FractionalPercent {
		return &v3typepb.FractionalPercent{Numerator: n, Denominator: d}
	}
	tests := []struct {
		name    string
		give    *v3faultpb.HTTPFault
		want    *HTTPFault
		wantErr string
	}{
		{name: "empty", give: &v3faultpb.HTTPFault{}, want: &HTTPFault{}},
		{
			name: "fixed delay, 50 %",
			give: &v3faultpb.HTTPFault{Delay: &v3faultcommonpb.FaultDelay{
				FaultDelaySecifier: &v3faultcommonpb.FaultDelay_FixedDelay{FixedDelay: durationpb.New(1500 * time.Millisecond)},
				Percentage:         pct(50, v3typepb.FractionalPercent_HUNDRED),
			}},
			want: &HTTPFault{Delay: &FaultDelay{Fixed: 1500 * time.Millisecond, Percentage: FaultPercentage{PerMillion: 500_000, Unit: 10_000}}},
		},
		{
			name: "header delay, per ten thousand",
			give: &v3faultpb.HTTPFault{Delay: &v3faultcommonpb.FaultDelay{
				FaultDelaySecifier: &v3faultcommonpb.FaultDelay_HeaderDelay_{HeaderDelay: &v3faultcommonpb.FaultDelay_HeaderDelay{}},
				Percentage:         pct(25, v3typepb.FractionalPercent_TEN_THOUSAND),
			}},
			want: &HTTPFault{Delay: &FaultDelay{FromHeader: true, Percentage: FaultPercentage{PerMillion: 2500, Unit: 100}}},
		},
		{
			name: "delay without specifier",
			give: &v3faultpb.HTTPFault{Delay: &v3faultcommonpb.FaultDelay{Percentage: pct(100, v3typepb.FractionalPercent_HUNDRED)}},
			want: &HTTPFault{},
		},
		{
			name: "http abort, numerator over 100 % capped",
			give: &v3faultpb.HTTPFault{Abort: &v3faultpb.FaultAbort{ErrorType: &v3faultpb.FaultAbort_HttpStatus{HttpStatus: 503}, Percentage: pct(2_000_000, v3typepb.FractionalPercent_MILLION)}},
			want: &HTTPFault{Abort: &FaultAbort{Kind: FaultAbortHTTPStatus, Status: 503, Percentage: FaultPercentage{PerMillion: 1_000_000, Unit: 1}}},
		},
		{
			name: "grpc abort, percentage unset",
			give: &v3faultpb.HTTPFault{Abort: &v3faultpb.FaultAbort{ErrorType: &v3faultpb.FaultAbort_GrpcStatus{GrpcStatus: 14}}},
			want: &HTTPFault{Abort: &FaultAbort{Kind: FaultAbortGRPCStatus, Status: 14, Percentage: FaultPercentage{Unit: 10_000}}},
		},
		{
			name: "header abort",
			give: &v3faultpb.HTTPFault{Abort: &v3faultpb.FaultAbort{ErrorType: &v3faultpb.FaultAbort_HeaderAbort_{HeaderAbort: &v3faultpb.FaultAbort_HeaderAbort{}}, Percentage: pct(1, v3typepb.FractionalPercent_HUNDRED)}},
			want: &HTTPFault{Abort: &FaultAbort{Kind: FaultAbortFromHeader, Percentage: FaultPercentage{PerMillion: 10_000, Unit: 10_000}}},
		},
		{
			name: "abort without error type",
			give: &v3faultpb.HTTPFault{Abort: &v3faultpb.FaultAbort{Percentage: pct(100, v3typepb.FractionalPercent_HUNDRED)}},
			want: &HTTPFault{},
		},
		{
			name: "max active faults and headers",
			give: &v3faultpb.HTTPFault{
				MaxActiveFaults: wrapperspb.UInt32(0),
				Headers: []*v3routepb.HeaderMatcher{
					{Name: "X-Fault", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Prefix{Prefix: "on"}}}},
					{Name: "x-re", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &v3matcherpb.RegexMatcher{Regex: "a+"}}},
				},
			},
			want: &HTTPFault{
				MaxActiveFaults: new(uint32),
				Headers: []HeaderMatcher{
					{Name: "x-fault", Kind: HeaderMatchPrefix, Value: "on"},
					{Name: "x-re", Kind: HeaderMatchSafeRegex, Value: "a+", Regex: regexp.MustCompile(`^(?:a+)$`)},
				},
			},
		},
		{
			name:    "invalid header matcher",
			give:    &v3faultpb.HTTPFault{Headers: []*v3routepb.HeaderMatcher{{Name: "x", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_PrefixMatch{}}}},
			wantErr: "headers[0].prefix_match: empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(where string, got *HTTPFault, err error, field string) {
				t.Helper()
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), field+tt.wantErr) {
						t.Errorf("%s: error %v; want one containing %q", where, err, field+tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if diff := cmp.Diff(tt.want, got, cmpOpts); diff != "" {
					t.Errorf("%s: decoded fault (-want +got):\n%s", where, diff)
				}
			}
			l := listener(t, "l", hcm(t, "r", withFilters(httpFilter(t, "fault", tt.give), routerFilter(t))))
			_, lis, err := ListenerType.DecodeTyped(mustAny(t, l))
			var got *HTTPFault
			if err == nil {
				got = lis.HTTPFilters[0].Fault
			}
			check("Listener", got, err, "http_filters[0].typed_config.")

			rt := &v3routepb.Route{
				Match:                &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: ""}},
				Action:               &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "c"}}},
				TypedPerFilterConfig: map[string]*anypb.Any{"fault": mustAny(t, tt.give)},
			}
			rc := &v3routepb.RouteConfiguration{Name: "r", VirtualHosts: []*v3routepb.VirtualHost{{Name: "vh", Domains: []string{"*"}, Routes: []*v3routepb.Route{rt}}}}
			_, r, err := RouteConfigType.DecodeTyped(mustAny(t, rc))
			got = nil
			if err == nil {
				got = r.VirtualHosts[0].Routes[0].FilterOverrides["fault"].Fault
			}
			check("override", got, err, "typed_per_filter_config[fault].")
		})
	}
}
