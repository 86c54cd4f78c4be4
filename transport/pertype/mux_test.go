// SPDX-License-Identifier: Apache-2.0

package pertype_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/pertype"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

const ldsType = "type.googleapis.com/envoy.config.listener.v3.Listener"

// fakeTransport hands every stream it opens to the test.
type fakeTransport struct {
	streams chan *fakeStream
}

func (f *fakeTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	s := &fakeStream{method: method, ctx: ctx, sent: make(chan []byte, 10), recv: make(chan []byte), fail: make(chan error, 1)}
	f.streams <- s
	return s, nil
}

func (f *fakeTransport) Close() {}

type fakeStream struct {
	method string
	ctx    context.Context
	sent   chan []byte
	recv   chan []byte
	fail   chan error
}

func (s *fakeStream) Send(b []byte) error {
	s.sent <- append([]byte(nil), b...)
	return nil
}

func (s *fakeStream) Recv() ([]byte, error) {
	select {
	case b := <-s.recv:
		return b, nil
	case err := <-s.fail:
		return nil, err
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

func next[T any](ctx context.Context, t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatal("timed out")
	}
	panic("unreachable")
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sentRequest(ctx context.Context, t *testing.T, s *fakeStream) *v3discoverypb.DiscoveryRequest {
	t.Helper()
	req := &v3discoverypb.DiscoveryRequest{}
	if err := proto.Unmarshal(next(ctx, t, s.sent), req); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestMux_ReopenReplaysAndClearsStaleNonce checks, on the wire: a reopened
// type's stream starts with the replay (node, last version, names, no
// nonce), and a later request carrying a nonce of the old stream is sent
// with the nonce cleared.
func TestMux_ReopenReplaysAndClearsStaleNonce(t *testing.T) {
	ctx := testContext(t)
	ft := &fakeTransport{streams: make(chan *fakeStream, 10)}
	mux, err := pertype.Wrap(ft).NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatal(err)
	}
	node := &v3corepb.Node{Id: "n"}
	if err := mux.Send(marshal(t, &v3discoverypb.DiscoveryRequest{Node: node, TypeUrl: ldsType, ResourceNames: []string{"a"}})); err != nil {
		t.Fatal(err)
	}
	s1 := next(ctx, t, ft.streams)
	if want := "/envoy.service.listener.v3.ListenerDiscoveryService/StreamListeners"; s1.method != want {
		t.Fatalf("opened %q, want %q", s1.method, want)
	}
	sentRequest(ctx, t, s1)
	s1.recv <- marshal(t, &v3discoverypb.DiscoveryResponse{TypeUrl: ldsType, VersionInfo: "1", Nonce: "n1"})
	if _, err := mux.Recv(); err != nil {
		t.Fatal(err)
	}
	ack := &v3discoverypb.DiscoveryRequest{TypeUrl: ldsType, VersionInfo: "1", ResponseNonce: "n1", ResourceNames: []string{"a"}}
	if err := mux.Send(marshal(t, ack)); err != nil {
		t.Fatal(err)
	}
	if got := sentRequest(ctx, t, s1); got.GetResponseNonce() != "n1" {
		t.Fatalf("ACK sent with nonce %q, want n1", got.GetResponseNonce())
	}

	s1.fail <- errors.New("stream reset")
	s2 := next(ctx, t, ft.streams)
	want := &v3discoverypb.DiscoveryRequest{Node: node, TypeUrl: ldsType, VersionInfo: "1", ResourceNames: []string{"a"}}
	if diff := cmp.Diff(want, sentRequest(ctx, t, s2), protocmp.Transform()); diff != "" {
		t.Fatalf("replay (-want +got):\n%s", diff)
	}

	change := &v3discoverypb.DiscoveryRequest{TypeUrl: ldsType, VersionInfo: "1", ResponseNonce: "n1", ResourceNames: []string{"a", "b"}}
	if err := mux.Send(marshal(t, change)); err != nil {
		t.Fatal(err)
	}
	want = &v3discoverypb.DiscoveryRequest{TypeUrl: ldsType, VersionInfo: "1", ResourceNames: []string{"a", "b"}}
	if diff := cmp.Diff(want, sentRequest(ctx, t, s2), protocmp.Transform()); diff != "" {
		t.Fatalf("request with a stale nonce (-want +got):\n%s", diff)
	}
}

// TestMux_FailBeforeAnyResponse checks that the mux fails with the type's
// error when a type's stream fails before the mux received anything.
func TestMux_FailBeforeAnyResponse(t *testing.T) {
	ctx := testContext(t)
	ft := &fakeTransport{streams: make(chan *fakeStream, 10)}
	mux, err := pertype.Wrap(ft).NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := mux.Send(marshal(t, &v3discoverypb.DiscoveryRequest{TypeUrl: ldsType, ResourceNames: []string{"a"}})); err != nil {
		t.Fatal(err)
	}
	s1 := next(ctx, t, ft.streams)
	s1.fail <- errors.New("unimplemented")
	_, err = mux.Recv()
	if err == nil || !strings.Contains(err.Error(), "unimplemented") || !strings.Contains(err.Error(), ldsType) {
		t.Fatalf("Recv() = %v, want the stream's error naming the type", err)
	}
}

// TestMux_MessageTooLarge checks that a type's stream failing on the size
// limit fails the mux even after responses, so that the engine reports
// the limit.
func TestMux_MessageTooLarge(t *testing.T) {
	ctx := testContext(t)
	ft := &fakeTransport{streams: make(chan *fakeStream, 10)}
	mux, err := pertype.Wrap(ft).NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := mux.Send(marshal(t, &v3discoverypb.DiscoveryRequest{TypeUrl: ldsType, ResourceNames: []string{"a"}})); err != nil {
		t.Fatal(err)
	}
	s1 := next(ctx, t, ft.streams)
	s1.recv <- marshal(t, &v3discoverypb.DiscoveryResponse{TypeUrl: ldsType, VersionInfo: "1", Nonce: "n1"})
	if _, err := mux.Recv(); err != nil {
		t.Fatal(err)
	}
	s1.fail <- transport.ErrMessageTooLarge
	if _, err := mux.Recv(); !errors.Is(err, transport.ErrMessageTooLarge) {
		t.Fatalf("Recv() = %v, want an error wrapping ErrMessageTooLarge", err)
	}
}
