// SPDX-License-Identifier: Apache-2.0

package lrs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/internal/backoff"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/transport"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
)

// Method is the LRS streaming RPC.
const Method = "/envoy.service.load_stats.v3.LoadReportingService/StreamLoadStats"

// FeatureSendAllClusters is the node client feature that tells the
// management server the client honours send_all_clusters.
const FeatureSendAllClusters = "envoy.lrs.supports_send_all_clusters"

// MinInterval is the shortest load reporting interval the Client uses: a
// shorter (or absent, or zero) load_reporting_interval is raised to it
// (R-22.2, as gRPC C++).
const MinInterval = time.Second

// Option configures a Client.
type Option func(*options)

type options struct {
	logger  *slog.Logger
	backoff func(retries int) time.Duration
}

// WithLogger sets the Client's logger (nil keeps the default); the
// default discards everything, as a Client knows no xDS client whose
// logger it could take: give it that logger (client.Client.Logger), as
// xdsresolver does for the Clients of its channels. Stream errors are
// logged at Warn, reports at Debug. The logger is called from the
// Client's goroutine.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithBackoff sets how long the Client waits before opening the stream
// again: f(retries), where retries counts the streams that ended in a row
// without a response, from 0 (so it starts over after a stream that
// received one). f is called on the Client's goroutine and must not
// block. The default, kept by a nil f, is 1 s × 1.5^retries, at most 30 s,
// each with a random jitter of ±50 %.
func WithBackoff(f func(retries int) time.Duration) Option {
	return func(o *options) {
		if f != nil {
			o.backoff = f
		}
	}
}

// defaultBackoff is the policy of WithBackoff's default.
var defaultBackoff = backoff.Policy{Initial: time.Second, Multiplier: 1.5, Jitter: 0.5, Max: 30 * time.Second}

// newDefaultBackoff returns WithBackoff's default for one Client: a
// backoff of defaultBackoff, started over when retries is 0. The Client
// calls it on its goroutine with retries 0, 1, 2, … (0 again after a
// stream that received a response), so the backoff's own count of
// attempts is retries.
func newDefaultBackoff() func(retries int) time.Duration {
	b := defaultBackoff.New()
	return func(retries int) time.Duration {
		if retries == 0 {
			b.Reset()
		}
		return b.NextBackOff()
	}
}

// Client reports the load of a Store to a management server over the LRS
// stream: it sends the node, waits for a LoadStatsResponse, then
// reports every load_reporting_interval (at least MinInterval) the
// clusters the server asked for (its clusters list, or every cluster with
// send_all_clusters). It follows every later LoadStatsResponse: a new
// cluster list or interval applies from the next report. A
// broken stream is opened again after a backoff; load is kept meanwhile.
// Close sends a final report.
//
// A Client needs only a transport.Transport, so it works without a gRPC
// channel: any program that records load in a Store can report it. It
// starts one goroutine, and one more per open stream to receive on it;
// Close ends them and waits for them.
type Client struct {
	t      transport.Transport
	node   *v3corepb.Node
	store  *Store
	opts   options
	cancel context.CancelFunc
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// NewClient starts reporting the load of store over t, identifying as
// node (sent in the first request of each stream, with
// FeatureSendAllClusters added to its client features; node is not
// modified). The caller keeps ownership of t and closes it after Close.
func NewClient(t transport.Transport, node *v3corepb.Node, store *Store, opts ...Option) *Client {
	o := options{logger: xdslog.Discard()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.backoff == nil {
		o.backoff = newDefaultBackoff()
	}
	n := proto.Clone(node).(*v3corepb.Node)
	if n == nil {
		n = &v3corepb.Node{}
	}
	if !slices.Contains(n.ClientFeatures, FeatureSendAllClusters) {
		n.ClientFeatures = append(n.ClientFeatures, FeatureSendAllClusters)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{t: t, node: n, store: store, opts: o, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(ctx)
	return c
}

// Close sends a final report on an established stream, ends the stream
// and waits for the Client's goroutines: the one that runs the streams and
// the one that receives on the current stream, which ends when the
// transport ends the stream's Recv (transport.Transport.NewStream: a
// stream lives until its context is cancelled). It is idempotent.
func (c *Client) Close() {
	c.once.Do(func() {
		close(c.stop)
		c.cancel() // ends a stream being opened; an open one is flushed first
	})
	<-c.done
}

func (c *Client) run(ctx context.Context) {
	defer close(c.done)
	retries := 0 // streams ended in a row without a response
	for {
		got, err := c.runStream(ctx)
		select {
		case <-c.stop:
			return
		default:
		}
		if got {
			retries = 0
		}
		wait := c.opts.backoff(retries)
		retries++
		c.opts.logger.Warn("LRS stream ended; retrying", xdslog.KeyError, err, xdslog.KeyBackoff, wait)
		t := time.NewTimer(wait)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// reportPlan is what the management server asked for.
type reportPlan struct {
	all      bool
	clusters map[string]bool
	interval time.Duration
}

func planOf(resp *v3lrspb.LoadStatsResponse) reportPlan {
	p := reportPlan{all: resp.GetSendAllClusters(), clusters: make(map[string]bool, len(resp.GetClusters())), interval: MinInterval}
	for _, name := range resp.GetClusters() {
		p.clusters[name] = true
	}
	if d := resp.GetLoadReportingInterval(); d != nil && d.IsValid() && d.AsDuration() > MinInterval {
		p.interval = d.AsDuration()
	}
	return p
}

func (p reportPlan) wanted(cluster string) bool { return p.all || p.clusters[cluster] }

// runStream runs one stream until it fails or Close is called; got says
// whether a response was received.
func (c *Client) runStream(ctx context.Context) (got bool, err error) {
	// The stream outlives ctx (cancelled by Close) once it is open, so
	// that Close can send a final report on it; while it is being opened,
	// Close ends it.
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopOpening := context.AfterFunc(ctx, cancel)
	st, err := c.t.NewStream(sctx, Method)
	if err != nil {
		stopOpening()
		return false, fmt.Errorf("opening the LRS stream: %w", err)
	}
	if err := c.send(st, &v3lrspb.LoadStatsRequest{Node: c.node}); err != nil {
		stopOpening()
		return false, err
	}
	if !stopOpening() {
		return false, errors.New("client closed")
	}
	resps := make(chan *v3lrspb.LoadStatsResponse)
	errc := make(chan error, 1)
	// The receiver is the Client's too: runStream returns (and so Close)
	// only once it has, which cancelling sctx makes happen (a stream lives
	// until its context is cancelled).
	recvDone := make(chan struct{})
	defer func() {
		cancel()
		<-recvDone
	}()
	go func() {
		defer close(recvDone)
		for {
			b, err := st.Recv()
			if err != nil {
				errc <- err
				return
			}
			resp := &v3lrspb.LoadStatsResponse{}
			if err := proto.Unmarshal(b, resp); err != nil {
				errc <- fmt.Errorf("decoding a LoadStatsResponse: %w", err)
				return
			}
			select {
			case resps <- resp:
			case <-sctx.Done():
				return
			}
		}
	}()
	var (
		plan   reportPlan
		ticker *time.Ticker
		tick   <-chan time.Time
	)
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		select {
		case resp := <-resps:
			got = true
			p := planOf(resp)
			c.opts.logger.Debug("LRS response", xdslog.KeyClusters, len(p.clusters), xdslog.KeySendAllClusters, p.all, xdslog.KeyInterval, p.interval)
			if ticker == nil {
				ticker = time.NewTicker(p.interval)
				tick = ticker.C
			} else if p.interval != plan.interval {
				ticker.Reset(p.interval)
			}
			plan = p
		case <-tick:
			if err := c.report(st, plan); err != nil {
				return got, err
			}
		case err := <-errc:
			return got, fmt.Errorf("LRS stream: %w", err)
		case <-c.stop:
			if ticker != nil {
				// flush what was recorded since the last report.
				_ = c.report(st, plan)
			}
			return got, errors.New("client closed")
		}
	}
}

func (c *Client) report(st transport.Stream, plan reportPlan) error {
	stats := c.store.Stats(plan.wanted)
	c.opts.logger.Debug("LRS report", xdslog.KeyClusters, len(stats))
	return c.send(st, &v3lrspb.LoadStatsRequest{ClusterStats: stats})
}

func (c *Client) send(st transport.Stream, req *v3lrspb.LoadStatsRequest) error {
	b, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("encoding a LoadStatsRequest: %w", err)
	}
	if err := st.Send(b); err != nil {
		return fmt.Errorf("sending a LoadStatsRequest: %w", err)
	}
	return nil
}
