// SPDX-License-Identifier: Apache-2.0

package client_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/watcher"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// BenchmarkDelta_OneClusterChangeAmong10000 measures, over gRPC on
// loopback against the testutil management server, what one changed
// Cluster among 10,000 cached (and watched) ones costs the client, with
// SotW and with delta ("Incremental xDS": "Rather than deliver all 100k
// clusters when a single cluster is modified, the management server only
// needs to deliver the single cluster that changed").
//
// Each iteration changes one cluster with Update and waits until its
// watcher has the new value. Besides ns/op (end to end, including the
// server building and sending its response), it reports:
//
//   - recv-B/op: response bytes the client received (counted by a
//     wrapping transport.Builder);
//   - client-ns/op: from the moment the transport returned the response
//     that carries the change to the watcher call: the client's own work
//     (decode, compare, apply, deliver).
func BenchmarkDelta_OneClusterChangeAmong10000(b *testing.B) {
	for _, delta := range []bool{false, true} {
		name := map[bool]string{false: "sotw", true: "delta"}[delta]
		b.Run(name, func(b *testing.B) { benchOneClusterChange(b, 10000, delta) })
	}
}

func benchOneClusterChange(b *testing.B, n int, delta bool) {
	ms := testutil.NewManagementServer(b, testutil.ServerOptions{})
	res := testutil.Resources{Clusters: make([]*v3clusterpb.Cluster, n)}
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("cluster-%05d", i)
		res.Clusters[i] = testutil.Cluster(names[i], "eds-"+names[i])
	}
	ms.Update("", res)
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		b.Fatal(err)
	}
	cb := &countingBuilder{inner: ms.Dialer()}
	opts := []client.Option{client.WithTransportBuilder(cb)}
	if delta {
		opts = append(opts, client.WithDelta())
	}
	c, err := client.New(cfg, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	// One watcher per cluster; each reports its latest EDS service name.
	type update struct {
		name, eds string
		at        time.Time
	}
	updates := make(chan update, n)
	var initial sync.WaitGroup
	initial.Add(n)
	for _, name := range names {
		first := true // only the serialized watcher calls touch it
		defer client.Watch(c, resources.ClusterType, name, watcher.Funcs[*resources.Cluster]{
			OnChanged: func(cl *resources.Cluster) {
				if first {
					first = false
					initial.Done()
					return
				}
				updates <- update{name: cl.Name, eds: cl.EDSServiceName, at: time.Now()}
			},
		})()
	}
	initial.Wait()

	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	var clientTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	startBytes := cb.bytes.Load()
	for i := range b.N {
		k := i % n
		eds := fmt.Sprintf("eds-%d", i)
		res.Clusters[k] = testutil.Cluster(names[k], eds)
		ms.Update("", res)
		select {
		case u := <-updates:
			if u.name != names[k] || u.eds != eds {
				b.Fatalf("update %+v, want %s with %s", u, names[k], eds)
			}
			clientTime += u.at.Sub(time.Unix(0, cb.lastRecv.Load()))
		case <-ctx.Done():
			b.Fatal("timed out waiting for the change")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cb.bytes.Load()-startBytes)/float64(b.N), "recv-B/op")
	b.ReportMetric(float64(clientTime.Nanoseconds())/float64(b.N), "client-ns/op")
}

// countingBuilder speaks ADS over the Transports of a transport.Dialer,
// counting the bytes of every message received, and when the last one was
// received.
type countingBuilder struct {
	inner    transport.Dialer
	bytes    atomic.Int64
	lastRecv atomic.Int64 // UnixNano
}

func (cb *countingBuilder) Build(sc *bootstrap.ServerConfig, o transport.BuildOptions) (transport.XDS, error) {
	tr, err := cb.inner.Dial(sc, o)
	if err != nil {
		return nil, err
	}
	return transport.ADS(&countingTransport{Transport: tr, cb: cb}), nil
}

type countingTransport struct {
	transport.Transport
	cb *countingBuilder
}

func (t *countingTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	s, err := t.Transport.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	return &countingStream{Stream: s, cb: t.cb}, nil
}

type countingStream struct {
	transport.Stream
	cb *countingBuilder
}

func (s *countingStream) Recv() ([]byte, error) {
	b, err := s.Stream.Recv()
	s.cb.bytes.Add(int64(len(b)))
	s.cb.lastRecv.Store(time.Now().UnixNano())
	return b, err
}
