// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
)

// held is one call of a holder's methods, with its done.
type held struct {
	event
	done func()
}

// holder is a watcher of a Manager that records every call with its done
// and never calls done itself: the test does.
type holder struct {
	calls chan held
}

func newHolder() *holder { return &holder{calls: make(chan held, 100)} }

func (h *holder) ResourceChanged(cfg *depmgr.XDSConfig, done func()) {
	h.calls <- held{event{cfg: cfg}, done}
}

func (h *holder) ResourceError(err error, done func()) {
	h.calls <- held{event{err: err}, done}
}

func (h *holder) AmbientError(err error, done func()) {
	h.calls <- held{event{ambient: err}, done}
}

// take waits until every goroutine of the synctest bubble is blocked
// (synctest.Wait), so that the Manager has made every call it will make
// until the next done, and returns the calls made since the last take.
func (h *holder) take() []held {
	synctest.Wait()
	var out []held
	for {
		select {
		case c := <-h.calls:
			out = append(out, c)
		default:
			return out
		}
	}
}

// deliveryEnv starts, in the current synctest bubble, the in-memory
// management server serving the Listener "svc" → route-svc → c1 →
// eds-c1 (127.0.0.1:9001) at version 1, and a Manager of "svc" on a client
// of it, whose watcher is a holder. It returns the resources, for
// changes, once the first snapshot was delivered; that call's done is
// held.
func deliveryEnv(t *testing.T) (*testutil.ManagementServer, testutil.Resources, *depmgr.Manager, *holder, held) {
	t.Helper()
	res := testutil.Resources{
		Version:   "1",
		Listeners: listeners(testutil.Listener("svc", "route-svc")),
		Routes:    routes(testutil.RouteConfig("route-svc", "svc", "c1")),
		Clusters:  clusters(testutil.Cluster("c1", "eds-c1")),
		Endpoints: endpoints(testutil.Endpoints("eds-c1", "127.0.0.1", 9001)),
	}
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true})
	ms.Update("", res)
	c := newClient(t, ms)
	h := newHolder()
	m := depmgr.New(c, "svc", h)
	t.Cleanup(m.Close)
	calls := h.take()
	if len(calls) != 1 || calls[0].cfg == nil {
		t.Fatalf("calls = %v, want the first snapshot", calls)
	}
	return ms, res, m, h, calls[0]
}

// wantEndpoints fails the test unless calls is one ResourceChanged whose
// c1 has exactly the address want.
func wantEndpoints(t *testing.T, calls []held, want string) {
	t.Helper()
	if len(calls) != 1 || calls[0].cfg == nil {
		t.Fatalf("calls = %v, want one ResourceChanged with %s", calls, want)
	}
	if got := addresses(calls[0].cfg.Cluster("c1").Config.Endpoints); !slices.Equal(got, []string{want}) {
		t.Fatalf("endpoints of c1 = %q, want %q", got, want)
	}
}

// TestDepMgr_Delivery_DoneHeld checks that done paces the Manager's
// deliveries, which coalesce meanwhile, but not the client's stream
// (package doc, "Delivery"), in a synctest bubble with the in-memory
// management server:
//  1. The first snapshot is delivered; the watcher holds its done.
//  2. The endpoints of c1 change four times (versions 2 to 5: ports 9002
//     to 9005), then the Listener is rejected (version 6): the server sees
//     the client ACK versions 2 to 5 and NACK version 6 while done is
//     held, and the watcher gets no call.
//  3. done: one call, ResourceChanged with port 9005, the latest state
//     (versions 2 to 4 were replaced before they were delivered). A
//     second call of the first done changes nothing.
//  4. done: AmbientError wrapping client.ErrResourceInvalid, which came
//     after version 5. done: nothing more.
func TestDepMgr_Delivery_DoneHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, res, _, h, first := deliveryEnv(t)

		for v := 2; v <= 6; v++ {
			res.Version = strconv.Itoa(v)
			typeURL := resources.EndpointsTypeURL
			if v < 6 {
				res.Endpoints = endpoints(testutil.Endpoints("eds-c1", "127.0.0.1", uint32(9000+v)))
			} else {
				typeURL = resources.ListenerTypeURL
				res.Listeners = listeners(testutil.Listener("svc", "")) // invalid: empty route_config_name
			}
			ms.Update("", res)
			if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
				if r.Req.GetTypeUrl() != typeURL || r.Req.GetResponseNonce() == "" {
					return false
				}
				if typeURL == resources.ListenerTypeURL {
					return r.Req.GetErrorDetail() != nil // the NACK of version 6
				}
				return r.Req.GetVersionInfo() == res.Version
			}); err != nil {
				t.Fatalf("version %d: no ACK or NACK while the watcher holds done: %v", v, err)
			}
		}
		if calls := h.take(); len(calls) != 0 {
			t.Fatalf("the watcher got %v while it held done, want nothing", calls)
		}

		first.done()
		calls := h.take()
		wantEndpoints(t, calls, "127.0.0.1:9005")
		first.done()
		if calls := h.take(); len(calls) != 0 {
			t.Fatalf("a second call of done delivered %v, want nothing before the held call's done", calls)
		}

		calls[0].done()
		calls = h.take()
		if len(calls) != 1 || !errors.Is(calls[0].ambient, client.ErrResourceInvalid) {
			t.Fatalf("calls = %v, want AmbientError wrapping ErrResourceInvalid", calls)
		}
		calls[0].done()
		if calls := h.take(); len(calls) != 0 {
			t.Fatalf("unexpected calls %v", calls)
		}
	})
}

// TestDepMgr_Delivery_CloseWithDoneHeld checks that Close does not wait
// for a done the watcher holds (package doc, "Delivery"), in a synctest
// bubble, where a Close that waited would be reported as a deadlock:
//  1. The first snapshot is delivered; the watcher holds its done.
//  2. The endpoints change; the client ACKs them: a snapshot is queued.
//  3. Close returns; the queued snapshot is never delivered, and the
//     late done delivers nothing.
func TestDepMgr_Delivery_CloseWithDoneHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := testContext(t)
		ms, res, m, h, first := deliveryEnv(t)

		res.Version = "2"
		res.Endpoints = endpoints(testutil.Endpoints("eds-c1", "127.0.0.1", 9002))
		ms.Update("", res)
		if _, err := ms.WaitForRequest(ctx, func(r *testutil.Request) bool {
			return r.Req.GetTypeUrl() == resources.EndpointsTypeURL && r.Req.GetVersionInfo() == "2"
		}); err != nil {
			t.Fatal(err)
		}
		if calls := h.take(); len(calls) != 0 {
			t.Fatalf("the watcher got %v while it held done, want nothing", calls)
		}

		m.Close()
		first.done()
		if calls := h.take(); len(calls) != 0 {
			t.Fatalf("the watcher got %v after Close, want nothing", calls)
		}
	})
}
