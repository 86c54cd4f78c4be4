// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"
)

// TestNames_BadNameHurtsOnlyItsWatch checks that a watch of a name that
// cannot be sent (not valid UTF-8, which protobuf strings must be, or
// longer than client.MaxNameLength) gets a ResourceError wrapping
// ErrUnsupported that says why, for that watch alone: the stream goes on,
// every other watch of the client gets its resources, and later watches
// too. On the old engine the name went into the subscription, every
// request of the stream failed to marshal, and every watcher of the
// client got connection errors forever ("context canceled").
func TestNames_BadNameHurtsOnlyItsWatch(t *testing.T) {
	for _, bad := range []struct{ name, want string }{
		{"svc-\xff\xfe", "not valid UTF-8"},
		{strings.Repeat("n", client.MaxNameLength+1), "longer than the limit"},
		{"xdstp://authority/envoy.config.listener.v3.Listener/\xff", "not valid UTF-8"},
	} {
		t.Run(bad.want, func(t *testing.T) {
			forEachProtocol(t, func(t *testing.T, delta bool, opts ...client.Option) {
				ctx := testContext(t)
				ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
				ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: "svc"}))
				c := newClient(t, ms, testutil.BootstrapOptions{}, opts...)

				good := newRecorder[*resources.Listener]()
				defer client.Watch(c, resources.ListenerType, "svc", good)()
				good.wantKind(ctx, t, changed, nil)

				w := newRecorder[*resources.Listener]()
				defer client.Watch(c, resources.ListenerType, bad.name, w)()
				e := w.wantKind(ctx, t, resourceError, client.ErrUnsupported)
				if !strings.Contains(e.err.Error(), bad.want) {
					t.Fatalf("error %q does not say %q", e.err, bad.want)
				}
				var re *client.ResourceError
				if !errors.As(e.err, &re) || re.TypeURL != resources.ListenerTypeURL {
					t.Fatalf("error %v is not a *ResourceError of the Listener type", e.err)
				}

				// Nobody else noticed: the stream goes on.
				cw := newRecorder[*resources.Cluster]()
				defer client.Watch(c, resources.ClusterType, "cluster-svc", cw)()
				cw.wantKind(ctx, t, changed, nil)
				good.wantNone(t, defaultTestShortTimeout)
				w.wantNone(t, defaultTestShortTimeout)
			})
		})
	}
}

// TestNames_MaxLengthAccepted checks that a name of exactly
// client.MaxNameLength bytes is subscribed.
func TestNames_MaxLengthAccepted(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	name := strings.Repeat("n", client.MaxNameLength)
	ms.Update("", testutil.Chain(testutil.ChainOptions{Listener: name}))
	c := newClient(t, ms, testutil.BootstrapOptions{})
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, name, w)()
	w.wantKind(ctx, t, changed, nil)
}

// TestStream_SendErrorIsReported checks that when a request cannot be
// sent, the watchers hear the send's error, not the cancellation of the
// receive side that it causes. On the old engine they got "context
// canceled".
func TestStream_SendErrorIsReported(t *testing.T) {
	ctx := testContext(t)
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{})
	sendErr := errors.New("the wire is on fire")
	c := newClient(t, ms, testutil.BootstrapOptions{}, client.WithTransportBuilder(failingSendBuilder{ms.TransportBuilder(), sendErr}))
	w := newRecorder[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, "svc", w)()
	e := w.wantKind(ctx, t, resourceError, client.ErrConnection)
	if !errors.Is(e.err, sendErr) {
		t.Fatalf("error %v does not wrap the send error %v", e.err, sendErr)
	}
}

// failingSendBuilder builds transports whose streams fail every Send with
// err.
type failingSendBuilder struct {
	transport.Builder
	err error
}

func (b failingSendBuilder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	x, err := b.Builder.Build(sc, o)
	if err != nil {
		return nil, err
	}
	return failingSendTransport{x, b.err}, nil
}

type failingSendTransport struct {
	transport.XDS
	err error
}

func (t failingSendTransport) NewXDSStream(ctx context.Context, spec transport.StreamSpec) (transport.XDSStream, error) {
	st, err := t.XDS.NewXDSStream(ctx, spec)
	if err != nil {
		return nil, err
	}
	return failingSendStream{st, t.err}, nil
}

type failingSendStream struct {
	transport.XDSStream
	err error
}

func (s failingSendStream) Send(*transport.Request) error { return s.err }
