// SPDX-License-Identifier: Apache-2.0

package calllabels_test

import (
	"context"
	"testing"

	"github.com/proxyless/xds/calllabels"
)

func TestHolder(t *testing.T) {
	var noContext context.Context // a picker may be given none
	if h := calllabels.FromContext(noContext); h != nil {
		t.Fatalf("FromContext(nil) = %p, want nil", h)
	}
	ctx := context.Background()
	if h := calllabels.FromContext(ctx); h != nil {
		t.Fatalf("FromContext(no holder) = %p, want nil", h)
	}
	var none *calllabels.Holder
	none.Set(&calllabels.Labels{Locality: "x"}) // no effect, no panic
	if got := none.Labels(); got != (calllabels.Labels{}) {
		t.Errorf("nil Holder: Labels() = %+v, want zero", got)
	}

	h := new(calllabels.Holder)
	ctx = calllabels.NewContext(ctx, h)
	type otherKey struct{}
	derived := context.WithValue(ctx, otherKey{}, 1)
	if got := calllabels.FromContext(derived); got != h {
		t.Fatalf("FromContext(derived) = %p, want %p", got, h)
	}
	if got := h.Labels(); got != (calllabels.Labels{}) {
		t.Errorf("new Holder: Labels() = %+v, want zero", got)
	}
	l := &calllabels.Labels{Locality: `{region="r1", zone="z1", sub_zone="s1"}`, BackendService: "c1"}
	calllabels.FromContext(derived).Set(l)
	if got := h.Labels(); got != *l {
		t.Errorf("after Set: Labels() = %+v, want %+v", got, *l)
	}
	h.Set(nil)
	if got := h.Labels(); got != (calllabels.Labels{}) {
		t.Errorf("after Set(nil): Labels() = %+v, want zero", got)
	}
}
