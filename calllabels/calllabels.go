// SPDX-License-Identifier: Apache-2.0

package calllabels

import (
	"context"
	"sync/atomic"
)

// Label keys, as gRFC A78 and A89 name them in OpenTelemetry.
const (
	KeyLocality       = "grpc.lb.locality"
	KeyBackendService = "grpc.lb.backend_service"
)

// Labels are the xDS labels of one RPC attempt; see the package
// documentation for their values.
type Labels struct {
	// Locality is the locality of the endpoint the attempt went to,
	// {region="r1", zone="z1", sub_zone="s1"}; "" when unknown.
	Locality string
	// BackendService is the name of the cluster the endpoint was picked
	// in; "" when unknown.
	BackendService string
}

// A Holder holds the labels of the current attempt of one RPC: the
// picker sets them, stats handlers read them when the attempt ends. Its
// zero value holds no labels. It is safe for concurrent use.
type Holder struct {
	l atomic.Pointer[Labels]
}

// Set makes l the labels of the attempt being picked; nil clears them
// (a pick that did not reach an endpoint). l is kept, not copied: it must
// not be modified afterwards (a picker sets the same *Labels for every
// RPC to one locality of one cluster). A nil h does nothing.
func (h *Holder) Set(l *Labels) {
	if h != nil {
		h.l.Store(l)
	}
}

// Labels returns the labels set last; the zero Labels (both "") when none
// were set, or when h is nil.
func (h *Holder) Labels() Labels {
	if h == nil {
		return Labels{}
	}
	if l := h.l.Load(); l != nil {
		return *l
	}
	return Labels{}
}

type holderKey struct{}

// NewContext returns a copy of ctx holding h, where FromContext finds it.
func NewContext(ctx context.Context, h *Holder) context.Context {
	return context.WithValue(ctx, holderKey{}, h)
}

// FromContext returns the Holder of ctx (or of a context derived from
// it), nil when it has none or ctx is nil. A nil Holder's methods are
// safe to call.
func FromContext(ctx context.Context) *Holder {
	if ctx == nil {
		return nil
	}
	h, _ := ctx.Value(holderKey{}).(*Holder)
	return h
}
