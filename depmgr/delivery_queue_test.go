// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"errors"
	"slices"
	"testing"
)

// TestDeliveryQueue checks how calls wait for a watcher that has not
// called done: at most one state (ResourceChanged or ResourceError) and
// one AmbientError, the newest of each, in the order they happened.
func TestDeliveryQueue(t *testing.T) {
	changed := func(v string) delivery { return delivery{kind: deliverChanged, cfg: &XDSConfig{ListenerVersion: v}} }
	failed := func(e string) delivery { return delivery{kind: deliverResourceError, err: errors.New(e)} }
	ambient := func(e string) delivery { return delivery{kind: deliverAmbientError, err: errors.New(e)} }
	tests := []struct {
		name string
		give []delivery
		want []string
	}{
		{"states replace each other", []delivery{changed("1"), changed("2"), changed("3")}, []string{"changed 3"}},
		{"an error replaces a snapshot", []delivery{changed("1"), failed("e")}, []string{"error e"}},
		{"a snapshot replaces an error", []delivery{failed("e"), changed("2")}, []string{"changed 2"}},
		{"ambient errors replace each other", []delivery{ambient("a"), ambient("b")}, []string{"ambient b"}},
		{"ambient after a state", []delivery{changed("1"), ambient("a")}, []string{"changed 1", "ambient a"}},
		{"ambient before a state", []delivery{ambient("a"), changed("1")}, []string{"ambient a", "changed 1"}},
		{"a newer state goes after the ambient error", []delivery{changed("1"), ambient("a"), changed("2")}, []string{"ambient a", "changed 2"}},
		{"a newer ambient error goes after the state", []delivery{ambient("a"), changed("1"), ambient("b")}, []string{"changed 1", "ambient b"}},
		{"many", []delivery{changed("1"), ambient("a"), failed("e"), ambient("b"), changed("2"), ambient("c"), changed("3")}, []string{"ambient c", "changed 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q deliveryQueue
			for _, d := range tt.give {
				q.push(d)
				if q.len() > 2 {
					t.Fatalf("%d deliveries queued, want at most 2", q.len())
				}
			}
			var got []string
			for d, ok := q.pop(); ok; d, ok = q.pop() {
				switch d.kind {
				case deliverChanged:
					got = append(got, "changed "+d.cfg.ListenerVersion)
				case deliverResourceError:
					got = append(got, "error "+d.err.Error())
				default:
					got = append(got, "ambient "+d.err.Error())
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("delivered %q, want %q", got, tt.want)
			}
		})
	}
}
