// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"
)

// TestDeletion_BeforeTheWriteIsRecorded checks against a race the
// bookkeeping once lost: the first request naming "a" and "b" is
// on the wire, and the management server has answered it (both values
// delivered) and then sent a response that leaves "b" out, before the
// client's send loop got back from writing that request. "b" was
// received, so the server knew it was asked for: its omission deletes it.
// On the old code every new subscription was marked "not requested yet"
// until the send loop recorded the write, and such an omission was taken
// for the answer to an earlier request: "b" stayed ACKED for good. Seen
// over gRPC under -race about once in 150 runs; here the write is held
// after the server got it (heldAfterWrite), in fake time.
func TestDeletion_BeforeTheWriteIsRecorded(t *testing.T) {
	synctestTest(t, func(t *testing.T) {
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{InMemory: true, Manual: true})
		hb := &heldAfterWrite{inner: ms.TransportBuilder(), release: make(chan struct{})}
		hb.held.Store(true)
		c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(hb))
		wa, wb := newRecorder[*resources.Cluster](), newRecorder[*resources.Cluster]()
		defer client.Watch(c, resources.ClusterType, "a", wa)()
		defer client.Watch(c, resources.ClusterType, "b", wb)()
		synctest.Wait()

		send := func(version string, names ...string) {
			t.Helper()
			resp := discoveryResponse(resources.ClusterTypeURL, version)
			for _, n := range names {
				resp.Resources = append(resp.Resources, testutil.MarshalAny(testutil.Cluster(n, "")))
			}
			if _, err := ms.SendResponse(t.Context(), resp); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		send("1", "a", "b")
		wa.wantKind(t.Context(), t, changed, nil)
		wb.wantKind(t.Context(), t, changed, nil)
		send("2", "a") // the write of the first request is still held
		select {
		case e := <-wb.events:
			if e.kind != resourceError || !errors.Is(e.err, client.ErrResourceNotFound) {
				t.Fatalf("b: event %v, want a ResourceError wrapping ErrResourceNotFound (R-14.1)", e)
			}
		default:
			t.Fatal("b left out of a CDS response after it was received: not deleted (R-14.1)")
		}
		close(hb.release)
	})
}

// heldAfterWrite wraps a transport builder so that, while held, Send
// writes the request and then blocks until release is closed: the server
// has the request, the client has not yet seen its write complete.
type heldAfterWrite struct {
	inner   transport.Builder
	held    atomic.Bool
	release chan struct{}
}

func (b *heldAfterWrite) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	x, err := b.inner.Build(sc, o)
	if err != nil {
		return nil, err
	}
	return heldTransport{XDS: x, b: b}, nil
}

type heldTransport struct {
	transport.XDS
	b *heldAfterWrite
}

func (tr heldTransport) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	s, err := tr.XDS.NewXDSStream(ctx, spec)
	if err != nil {
		return nil, err
	}
	return heldStream{XDSStream: s, b: tr.b, ctx: ctx}, nil
}

type heldStream struct {
	transport.XDSStream
	b   *heldAfterWrite
	ctx context.Context
}

func (s heldStream) Send(req *transport.Request) error {
	err := s.XDSStream.Send(req)
	if s.b.held.Load() {
		select {
		case <-s.b.release:
		case <-s.ctx.Done():
		}
	}
	return err
}
