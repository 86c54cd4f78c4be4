// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// faultTypeURL is the type URL of the fault injection filter's config.
const faultTypeURL = "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"

// The headers of gRFC A33 (Envoy's x-envoy-fault-* headers) that let a
// request ask for a fault.
const (
	headerDelay           = "x-envoy-fault-delay-request"
	headerDelayPercentage = "x-envoy-fault-delay-request-percentage"
	headerAbortGRPC       = "x-envoy-fault-abort-grpc-request"
	headerAbortHTTP       = "x-envoy-fault-abort-request"
	headerAbortPercentage = "x-envoy-fault-abort-request-percentage"
	perMillion            = 1_000_000
)

// activeFaults counts the requests with an injected fault in progress, in
// the whole process: max_active_faults limits "the maximum number of
// concurrent active fault injected RPC for the entire process" (gRFC A33,
// "Maximum active faults"), whatever filter, route, configuration or
// channel injected them, as grpc-go and gRPC C++ count them. It is a
// gauge, not a registry: nothing is registered in it.
var activeFaults atomic.Int64

// ActiveFaults returns the number of requests with an injected fault in
// progress in the process (max_active_faults, gRFC A33).
func ActiveFaults() int64 { return activeFaults.Load() }

// Abort is the status an injected abort ends a request with.
type Abort struct {
	// GRPC: Code is a gRPC status code (grpc_status, or the
	// x-envoy-fault-abort-grpc-request header); else an HTTP status
	// (http_status, or the x-envoy-fault-abort-request header), which a
	// gRPC data path maps to a gRPC code (gRFC A33).
	GRPC bool
	Code uint32
}

// InjectFault runs fault f for one request with headers h (gRFC A33):
// when the headers match and max_active_faults allows (counting the
// faults in progress in the process), a delay (waiting for it, or ctx's
// end), then an abort. It returns the abort that ends the request (nil to
// let it proceed), and ctx's error when it ended during the delay.
// release must be called when the request ends (it counts the request as
// an active fault while it runs); it is never nil.
func InjectFault(ctx context.Context, f *resources.HTTPFault, h *routing.Headers) (abort *Abort, release func(), err error) {
	release = noop
	for i := range f.Headers {
		if !routing.MatchHeader(&f.Headers[i], h) {
			return nil, release, nil
		}
	}
	if f.MaxActiveFaults != nil && activeFaults.Load() >= int64(*f.MaxActiveFaults) {
		return nil, release, nil
	}
	delay, doDelay := delayFor(f.Delay, h)
	abort = abortFor(f.Abort, h)
	if !doDelay && abort == nil {
		return nil, release, nil
	}
	activeFaults.Add(1)
	release = func() { activeFaults.Add(-1) }
	if doDelay && delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, release, ctx.Err()
		}
	}
	return abort, release, nil
}

func noop() {}

func delayFor(d *resources.FaultDelay, h *routing.Headers) (time.Duration, bool) {
	if d == nil {
		return 0, false
	}
	delay, pm := d.Fixed, d.Percentage.PerMillion
	if d.FromHeader {
		v, ok := h.Get(headerDelay)
		ms, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || ms < 0 {
			return 0, false
		}
		delay = time.Duration(ms) * time.Millisecond
		pm = headerPercentage(h, headerDelayPercentage, pm, d.Percentage.Unit)
	}
	return delay, chance(pm)
}

// abortFor returns the abort of a, nil for none; a gRPC status OK aborts
// nothing.
func abortFor(a *resources.FaultAbort, h *routing.Headers) *Abort {
	if a == nil {
		return nil
	}
	var out Abort
	pm := a.Percentage.PerMillion
	switch a.Kind {
	case resources.FaultAbortGRPCStatus:
		out = Abort{GRPC: true, Code: a.Status}
	case resources.FaultAbortHTTPStatus:
		out = Abort{Code: a.Status}
	case resources.FaultAbortFromHeader:
		if v, ok := h.Get(headerAbortGRPC); ok {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return nil
			}
			out = Abort{GRPC: true, Code: uint32(n)}
		} else if v, ok := h.Get(headerAbortHTTP); ok {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return nil
			}
			out = Abort{Code: uint32(n)}
		} else {
			return nil
		}
		pm = headerPercentage(h, headerAbortPercentage, pm, a.Percentage.Unit)
	default:
		return nil
	}
	if out.GRPC && out.Code == 0 {
		return nil
	}
	if !chance(pm) {
		return nil
	}
	return &out
}

// headerPercentage returns the share a request asks for in header (the
// numerator over the config's denominator, whose unit is unit parts per
// million), capped by the configured share (gRFC A33).
func headerPercentage(h *routing.Headers, header string, configured, unit uint32) uint32 {
	v, ok := h.Get(header)
	if !ok {
		return configured
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return configured
	}
	return min(uint32(min(n*uint64(unit), perMillion)), configured)
}

func chance(pm uint32) bool {
	return pm >= perMillion || rand.Uint32N(perMillion) < pm
}

// routeFaults returns the fault configs that apply to the requests of
// route r of virtual host vh sent to a weighted cluster whose overrides
// are wc (nil for none), one per fault filter of the Listener's chain, in
// order: the weighted cluster's override, else the route's, else the
// virtual host's, else the filter's own config (gRFC A39). Package
// resources decoded each of them.
func routeFaults(filters []resources.HTTPFilter, vh *resources.VirtualHost, r *resources.Route, wc map[string]resources.FilterOverride) ([]*resources.HTTPFault, error) {
	var out []*resources.HTTPFault
	for _, f := range filters {
		if f.TypeURL != faultTypeURL {
			continue
		}
		typeURL, fault := f.TypeURL, f.Fault
		if o, ok := wc[f.Name]; ok {
			typeURL, fault = o.TypeURL, o.Fault
		} else if o, ok := r.FilterOverrides[f.Name]; ok {
			typeURL, fault = o.TypeURL, o.Fault
		} else if o, ok := vh.FilterOverrides[f.Name]; ok {
			typeURL, fault = o.TypeURL, o.Fault
		}
		if typeURL != faultTypeURL || fault == nil {
			// Package resources accepts a fault filter's config or
			// override only as an HTTPFault (a TypedStruct is rejected,
			// as by gRPC): this is an override of another filter type.
			return nil, fmt.Errorf("fault filter %q: override of type %q, not %s: %w", f.Name, typeURL, faultTypeURL, ErrUnsupported)
		}
		out = append(out, fault)
	}
	return out, nil
}

// overridesFault reports whether overrides has an entry for a fault
// filter of filters.
func overridesFault(filters []resources.HTTPFilter, overrides map[string]resources.FilterOverride) bool {
	for _, f := range filters {
		if _, ok := overrides[f.Name]; ok && f.TypeURL == faultTypeURL {
			return true
		}
	}
	return false
}
