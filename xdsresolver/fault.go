// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// faultTypeURL is the type URL of the fault injection filter's config.
const faultTypeURL = "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"

// The headers of gRFC A33 that let an RPC ask for a fault.
const (
	headerDelay             = "x-envoy-fault-delay-request"
	headerDelayPercentage   = "x-envoy-fault-delay-request-percentage"
	headerAbortGRPC         = "x-envoy-fault-abort-grpc-request"
	headerAbortHTTP         = "x-envoy-fault-abort-request"
	headerAbortPercentage   = "x-envoy-fault-abort-request-percentage"
	faultMessage            = "RPC terminated due to fault injection"
	percentageDenomMillions = 1_000_000
)

// faultConfig is one fault injection filter's config for a route (gRFC
// A33), as package resources decoded it, with its abort as a gRPC code.
type faultConfig struct {
	*resources.HTTPFault
	abort codes.Code // for an abort of a fixed status: its gRPC code
}

// activeFaults counts the RPCs with an injected fault in progress, in the
// whole process: max_active_faults limits "the maximum number of
// concurrent active fault injected RPC for the entire process" (gRFC A33,
// "Maximum active faults"), whatever filter, route, configuration or
// channel injected them, as grpc-go and gRPC C++ count them. It is a
// gauge, not a registry: nothing is registered in it.
var activeFaults atomic.Int64

// newFaultConfig returns the config of fault f.
func newFaultConfig(f *resources.HTTPFault) *faultConfig {
	fc := &faultConfig{HTTPFault: f}
	if a := f.Abort; a != nil {
		switch a.Kind {
		case resources.FaultAbortGRPCStatus:
			fc.abort = codes.Code(a.Status)
		case resources.FaultAbortHTTPStatus:
			fc.abort = httpToGRPC(a.Status)
		}
	}
	return fc
}

// httpToGRPC maps an HTTP status to a gRPC code as gRPC does for
// responses without grpc-status (and gRFC A33 for http_status aborts).
func httpToGRPC(h uint32) codes.Code {
	switch h {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}

// routeFaults returns the fault configs that apply to the RPCs of route
// r of virtual host vh sent to a weighted cluster whose overrides are
// wc (nil for none), one per fault filter of the Listener's chain, in
// order: the weighted cluster's override, else the route's, else the
// virtual host's, else the filter's own config (gRFC A39).
func routeFaults(filters []resources.HTTPFilter, vh *resources.VirtualHost, r *resources.Route, wc map[string]resources.FilterOverride) ([]*faultConfig, error) {
	var out []*faultConfig
	for _, f := range filters {
		if f.TypeURL != faultTypeURL {
			continue
		}
		cfg, fault := f.Config, f.Fault
		if o, ok := wc[f.Name]; ok {
			cfg, fault = o.Config, o.Fault
		} else if o, ok := r.FilterOverrides[f.Name]; ok {
			cfg, fault = o.Config, o.Fault
		} else if o, ok := vh.FilterOverrides[f.Name]; ok {
			cfg, fault = o.Config, o.Fault
		}
		if cfg.GetTypeUrl() != faultTypeURL {
			// Package resources accepts a fault filter's config or
			// override only as an HTTPFault (a TypedStruct is rejected,
			// as by gRPC): this is an override of another filter type.
			return nil, fmt.Errorf("fault filter %q: override of type %q, not %s: %w", f.Name, cfg.GetTypeUrl(), faultTypeURL, ErrUnsupported)
		}
		out = append(out, newFaultConfig(fault))
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

// apply runs the fault of f for one RPC with headers h (gRFC A33): when
// the headers match and max_active_faults allows (counting the faults
// in progress in the process, activeFaults), a delay (waiting for
// it, or ctx's end), then an abort. It returns the error that ends the
// RPC, or nil to let it proceed; release must be called when the RPC
// ends (it counts the RPC as an active fault while it runs).
func (f *faultConfig) apply(ctx context.Context, h *routing.Headers) (release func(), err error) {
	release = func() {}
	for i := range f.Headers {
		if !routing.MatchHeader(&f.Headers[i], h) {
			return release, nil
		}
	}
	if f.MaxActiveFaults != nil && activeFaults.Load() >= int64(*f.MaxActiveFaults) {
		return release, nil
	}
	delay, doDelay := f.delayFor(h)
	code, doAbort := f.abortFor(h)
	if !doDelay && !doAbort {
		return release, nil
	}
	activeFaults.Add(1)
	release = func() { activeFaults.Add(-1) }
	if doDelay && delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return release, status.FromContextError(ctx.Err()).Err()
		}
	}
	if doAbort {
		return release, status.Error(code, faultMessage)
	}
	return release, nil
}

func (f *faultConfig) delayFor(h *routing.Headers) (time.Duration, bool) {
	if f.Delay == nil {
		return 0, false
	}
	d, pm := f.Delay.Fixed, f.Delay.Percentage.PerMillion
	if f.Delay.FromHeader {
		v, ok := h.Get(headerDelay)
		ms, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || ms < 0 {
			return 0, false
		}
		d = time.Duration(ms) * time.Millisecond
		pm = headerPercentage(h, headerDelayPercentage, pm, f.Delay.Percentage.Unit)
	}
	return d, chance(pm)
}

func (f *faultConfig) abortFor(h *routing.Headers) (codes.Code, bool) {
	if f.Abort == nil {
		return codes.OK, false
	}
	code, pm := f.abort, f.Abort.Percentage.PerMillion
	if f.Abort.Kind == resources.FaultAbortFromHeader {
		if v, ok := h.Get(headerAbortGRPC); ok {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return codes.OK, false
			}
			code = codes.Code(n)
		} else if v, ok := h.Get(headerAbortHTTP); ok {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return codes.OK, false
			}
			code = httpToGRPC(uint32(n))
		} else {
			return codes.OK, false
		}
		pm = headerPercentage(h, headerAbortPercentage, pm, f.Abort.Percentage.Unit)
	}
	if code == codes.OK {
		return codes.OK, false
	}
	return code, chance(pm)
}

// headerPercentage returns the share an RPC asks for in header (the
// numerator over the config's denominator, whose unit is mult parts per
// million), capped by the configured share (gRFC A33).
func headerPercentage(h *routing.Headers, header string, configured, mult uint32) uint32 {
	v, ok := h.Get(header)
	if !ok {
		return configured
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return configured
	}
	return min(uint32(min(n*uint64(mult), percentageDenomMillions)), configured)
}

func chance(perMillion uint32) bool {
	return perMillion >= percentageDenomMillions || rand.Uint32N(percentageDenomMillions) < perMillion
}
