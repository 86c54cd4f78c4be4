// SPDX-License-Identifier: Apache-2.0

package recvlimit

import "testing"

// TestChoose checks the order of the limits (the transport's own option,
// then the client's, then the default) and that the hint names only the
// options that would change the limit chosen.
func TestChoose(t *testing.T) {
	for _, c := range []struct {
		own    int64
		client int
		want   Limit
	}{
		{0, 0, Limit{10, "raise it with client.WithMaxRecvMsgSize or x.WithLimit"}},
		{0, 5, Limit{5, "raise it with client.WithMaxRecvMsgSize"}},
		{7, 5, Limit{7, "raise it with x.WithLimit"}},
		{7, 0, Limit{7, "raise it with x.WithLimit"}},
	} {
		if got := Choose(c.own, "x.WithLimit", c.client, 10); got != c.want {
			t.Errorf("Choose(%d, client %d) = %+v, want %+v", c.own, c.client, got, c.want)
		}
	}
}
