// SPDX-License-Identifier: Apache-2.0

package lrs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/proxyless/xds/internal/backoff"
	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/transport"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
)

// fakeTransport hands each stream the client opens to the test.
type fakeTransport struct {
	streams chan *fakeStream
	// linger is how long a stream's Recv takes to return once the
	// stream's context has ended, as a transport that waits for the
	// server's status does.
	linger time.Duration
}

type fakeStream struct {
	ctx      context.Context
	linger   time.Duration
	toServer chan []byte
	toClient chan []byte
	broken   chan struct{}
}

func (f *fakeTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	if method != lrs.Method {
		return nil, errors.New("unexpected method " + method)
	}
	s := &fakeStream{ctx: ctx, linger: f.linger, toServer: make(chan []byte, 100), toClient: make(chan []byte, 100), broken: make(chan struct{})}
	f.streams <- s
	return s, nil
}

func (f *fakeTransport) Close() {}

func (s *fakeStream) Send(b []byte) error {
	select {
	case <-s.broken:
		return errors.New("broken")
	default:
	}
	s.toServer <- b
	return nil
}

func (s *fakeStream) Recv() ([]byte, error) {
	select {
	case b := <-s.toClient:
		return b, nil
	case <-s.broken:
		return nil, errors.New("broken")
	case <-s.ctx.Done():
		time.Sleep(s.linger)
		return nil, s.ctx.Err()
	}
}

func (s *fakeStream) respond(t *testing.T, resp *v3lrspb.LoadStatsResponse) {
	t.Helper()
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	s.toClient <- b
}

// next returns the next request the client sent, failing if none is
// waiting (call after synctest.Wait).
func (s *fakeStream) next(t *testing.T) *v3lrspb.LoadStatsRequest {
	t.Helper()
	select {
	case b := <-s.toServer:
		req := &v3lrspb.LoadStatsRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			t.Fatal(err)
		}
		return req
	default:
		t.Fatal("no request sent")
		return nil
	}
}

func (s *fakeStream) none(t *testing.T) {
	t.Helper()
	select {
	case <-s.toServer:
		t.Fatal("unexpected request")
	default:
	}
}

func clusters(req *v3lrspb.LoadStatsRequest) map[string]uint64 {
	out := map[string]uint64{}
	for _, cs := range req.GetClusterStats() {
		for _, ls := range cs.GetUpstreamLocalityStats() {
			out[cs.GetClusterName()] += ls.GetTotalIssuedRequests()
		}
	}
	return out
}

// TestLRS_Client_FollowsEveryResponse checks in virtual time: the
// client sends the node, reports at the interval of the response (raised
// to 1 s when unset), only for the clusters asked for; a later response
// changes the clusters (send_all_clusters) and the interval; each report
// holds the counts since the previous one and the actual interval; Close
// flushes a final report.
func TestLRS_Client_FollowsEveryResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := &fakeTransport{streams: make(chan *fakeStream, 4)}
		store := lrs.NewStore()
		la := store.Cluster("a", "eds-a").Locality(resources.LocalityID{Zone: "z1"})
		lb := store.Cluster("b", "").Locality(resources.LocalityID{Zone: "z2"})
		c := lrs.NewClient(ft, &v3corepb.Node{Id: "n"}, store)
		defer c.Close()
		s := <-ft.streams
		synctest.Wait()
		first := s.next(t)
		if first.GetNode().GetId() != "n" || len(first.GetClusterStats()) != 0 {
			t.Fatalf("first request = %v; want the node and no stats", first)
		}

		s.respond(t, &v3lrspb.LoadStatsResponse{Clusters: []string{"a"}}) // no interval: 1 s
		la.Start()
		la.Finish(nil)
		lb.Start()
		lb.Finish(nil)
		synctest.Wait()
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		s.none(t)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		r := s.next(t)
		if got := clusters(r); len(got) != 1 || got["a"] != 1 {
			t.Errorf("first report = %v; want a: 1 only", got)
		}
		if cs := r.GetClusterStats()[0]; cs.GetClusterServiceName() != "eds-a" || cs.GetUpstreamLocalityStats()[0].GetTotalSuccessfulRequests() != 1 {
			t.Errorf("first report for a = %v; want service eds-a, 1 succeeded", cs)
		}

		// A later response: every cluster, every 5 s.
		s.respond(t, &v3lrspb.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: durationpb.New(5 * time.Second)})
		la.Start()
		la.Finish(errors.New("boom"))
		synctest.Wait()
		time.Sleep(4 * time.Second)
		synctest.Wait()
		s.none(t)
		time.Sleep(time.Second)
		synctest.Wait()
		r = s.next(t)
		if got := clusters(r); got["a"] != 1 || got["b"] != 1 {
			t.Errorf("report after send_all_clusters = %v; want a: 1 (since the last report), b: 1", got)
		}
		for _, cs := range r.GetClusterStats() {
			want := 5 * time.Second
			if cs.GetClusterName() == "b" {
				want = 6 * time.Second // never reported before: since the store made it
			}
			if d := cs.GetLoadReportInterval().AsDuration(); d != want {
				t.Errorf("cluster %s: load_report_interval %v; want %v", cs.GetClusterName(), d, want)
			}
			if cs.GetClusterName() == "a" && cs.GetUpstreamLocalityStats()[0].GetTotalErrorRequests() != 1 {
				t.Errorf("cluster a: %v; want 1 errored", cs)
			}
		}

		// Close flushes.
		la.Start()
		c.Close()
		r = s.next(t)
		if got := clusters(r); got["a"] != 1 {
			t.Errorf("final report = %v; want a: 1", got)
		}
		if ip := r.GetClusterStats()[0].GetUpstreamLocalityStats()[0].GetTotalRequestsInProgress(); ip != 1 {
			t.Errorf("final report: %d in progress; want 1", ip)
		}
	})
}

// TestLRS_Client_Reconnects checks that a broken stream is opened again
// after the backoff, with the node, and that load recorded meanwhile is
// reported on the new stream.
func TestLRS_Client_Reconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := &fakeTransport{streams: make(chan *fakeStream, 4)}
		store := lrs.NewStore()
		la := store.Cluster("a", "").Locality(resources.LocalityID{})
		c := lrs.NewClient(ft, &v3corepb.Node{Id: "n"}, store, lrs.WithBackoff(func(int) time.Duration { return 3 * time.Second }))
		defer c.Close()
		s := <-ft.streams
		synctest.Wait()
		s.next(t)
		s.respond(t, &v3lrspb.LoadStatsResponse{Clusters: []string{"a"}})
		synctest.Wait()
		close(s.broken)
		la.Start()
		la.Finish(nil)
		synctest.Wait()
		time.Sleep(3 * time.Second)
		s2 := <-ft.streams
		synctest.Wait()
		if first := s2.next(t); first.GetNode().GetId() != "n" {
			t.Errorf("first request of the new stream = %v; want the node", first)
		}
		s2.respond(t, &v3lrspb.LoadStatsResponse{Clusters: []string{"a"}})
		time.Sleep(time.Second)
		synctest.Wait()
		if got := clusters(s2.next(t)); got["a"] != 1 {
			t.Errorf("report on the new stream = %v; want a: 1", got)
		}
	})
}

// TestLRS_Client_BackoffRetries checks what WithBackoff's func is given:
// the number of streams that ended in a row without a response, from 0,
// starting over after a stream that received one; and that the Client
// waits what it returns.
func TestLRS_Client_BackoffRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := &fakeTransport{streams: make(chan *fakeStream, 4)}
		var retries []int // written on the Client's goroutine, read after synctest.Wait
		backoff := func(n int) time.Duration {
			retries = append(retries, n)
			return time.Duration(n+1) * time.Second
		}
		c := lrs.NewClient(ft, &v3corepb.Node{Id: "n"}, lrs.NewStore(), lrs.WithBackoff(backoff))
		defer c.Close()
		// Two streams end without a response, a third after one.
		start := time.Now()
		for i, respond := range []bool{false, false, true} {
			s := <-ft.streams
			synctest.Wait()
			s.next(t)
			if respond {
				s.respond(t, &v3lrspb.LoadStatsResponse{Clusters: []string{"a"}})
				synctest.Wait()
			}
			close(s.broken)
			synctest.Wait()
			if want := []int{0, 1, 0}[:i+1]; !slices.Equal(retries, want) {
				t.Fatalf("after stream %d: backoff called with %v; want %v", i+1, retries, want)
			}
		}
		<-ft.streams
		if got := time.Since(start); got != 4*time.Second {
			t.Errorf("the fourth stream opened %v after the first; want 4s (1s + 2s + 1s of backoff)", got)
		}
	})
}

// blockingTransport's NewStream blocks until its context ends, as a gRPC
// stream to a server still connecting does.
type blockingTransport struct{ opened chan struct{} }

func (b *blockingTransport) NewStream(ctx context.Context, _ string) (transport.Stream, error) {
	b.opened <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (b *blockingTransport) Close() {}

// TestLRS_Client_CloseWhileOpening checks that Close returns while the
// stream is still being opened.
func TestLRS_Client_CloseWhileOpening(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bt := &blockingTransport{opened: make(chan struct{}, 1)}
		c := lrs.NewClient(bt, &v3corepb.Node{Id: "n"}, lrs.NewStore())
		<-bt.opened
		c.Close()
	})
}

// TestLRS_Client_CloseWaitsForItsGoroutines checks that Close returns only
// once every goroutine of the Client has: the stream's receiver included,
// even when the transport takes a while (a second, in fake time) to end a
// stream's Recv after its context is cancelled.
func TestLRS_Client_CloseWaitsForItsGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := &fakeTransport{streams: make(chan *fakeStream, 4), linger: time.Second}
		c := lrs.NewClient(ft, &v3corepb.Node{Id: "n"}, lrs.NewStore())
		s := <-ft.streams
		synctest.Wait()
		s.next(t)
		s.respond(t, &v3lrspb.LoadStatsResponse{Clusters: []string{"a"}})
		synctest.Wait()
		c.Close()
		leakcheck.CheckNow(t)
	})
}

// TestLRS_Client_DefaultBackoff pins the default of WithBackoff in fake
// time: its policy is the documented one (1 s × 1.5^retries, at most 30 s,
// ± 50 %), the Client waits that long between streams that end without a
// response (each wait within its nominal delay ± 50 %, the nominal delay
// reaching the 30 s cap after 9 retries), and starts over at 1 s after a
// stream that received a response.
func TestLRS_Client_DefaultBackoff(t *testing.T) {
	if want := (backoff.Policy{Initial: time.Second, Multiplier: 1.5, Jitter: 0.5, Max: 30 * time.Second}); lrs.DefaultBackoff != want {
		t.Fatalf("default backoff policy = %+v, want %+v (WithBackoff's doc)", lrs.DefaultBackoff, want)
	}
	synctest.Test(t, func(t *testing.T) {
		ft := &fakeTransport{streams: make(chan *fakeStream, 4)}
		c := lrs.NewClient(ft, &v3corepb.Node{Id: "n"}, lrs.NewStore())
		defer c.Close()
		within := func(what string, got, nominal time.Duration) {
			t.Helper()
			if got < nominal/2 || got > nominal*3/2+1 {
				t.Errorf("%s: waited %v, want %v ± 50%%", what, got, nominal)
			}
		}
		s := <-ft.streams
		nominal := time.Second
		for retry := range 12 {
			synctest.Wait()
			close(s.broken) // no response
			ended := time.Now()
			s = <-ft.streams
			within(fmt.Sprintf("retry %d", retry), time.Since(ended), nominal)
			nominal = min(nominal*3/2, 30*time.Second)
		}
		if nominal != 30*time.Second {
			t.Fatalf("nominal delay after 12 retries = %v, want the 30s cap", nominal)
		}
		synctest.Wait()
		s.respond(t, &v3lrspb.LoadStatsResponse{Clusters: []string{"a"}})
		synctest.Wait()
		close(s.broken)
		ended := time.Now()
		<-ft.streams
		within("after a stream with a response", time.Since(ended), time.Second)
	})
}
