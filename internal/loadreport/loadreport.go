// SPDX-License-Identifier: Apache-2.0

// Package loadreport reports the load of a data path's requests to the
// management servers: an lrs.Store that the data path's pickers
// feed, and one lrs.Client per management server that a cluster with
// lrs_server "self" came from. The gRPC data path (package xdsresolver)
// and the net/http one (package xdshttp) share it.
package loadreport

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/transport"
)

// Reporter reports the load of the requests of its users (the channels
// of one xdsresolver.Builder, the hosts of one xdshttp.Transport): a
// Store fed by their pickers, and one lrs.Client per management server
// that a cluster with lrs_server "self" came from, started on first need
// (Ensure) and closed, after a final report, when the last user releases
// it. Safe for concurrent use.
type Reporter struct {
	store   *lrs.Store
	builder transport.Builder
	cfg     *bootstrap.Config
	logger  *slog.Logger

	mu      sync.Mutex
	clients map[string]*lrsConn // by server URI
	refs    int                 // resolvers using it
}

// New returns a Reporter whose load reporting streams are those of the
// transports b builds for the servers of cfg.
func New(b transport.Builder, cfg *bootstrap.Config, logger *slog.Logger) *Reporter {
	return &Reporter{store: lrs.NewStore(), builder: b, cfg: cfg, logger: logger}
}

// Store returns the Store the users record their load in.
func (l *Reporter) Store() *lrs.Store { return l.store }

// Acquire notes a user of l; Release it when the user closes.
func (l *Reporter) Acquire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refs++
}

type lrsConn struct {
	t transport.XDS
	c *lrs.Client
}

// lrsStreams is the transport.Transport of an lrs.Client: the load
// reporting streams (transport.XDS.NewLRSStream) of a transport the
// builder built.
type lrsStreams struct{ transport.XDS }

func (t lrsStreams) NewStream(ctx context.Context, _ string) (transport.Stream, error) {
	return t.NewLRSStream(ctx)
}

// Ensure starts reporting to the management server of every leaf cluster
// of cfg with lrs_server "self", if not done yet. Failures are logged.
func (l *Reporter) Ensure(cfg *dataplane.Config) {
	for _, c := range cfg.Clusters {
		for _, p := range c.Priorities {
			if p.LoadReported {
				if err := l.ensureFor(p.Leaf); err != nil {
					l.logger.Warn("cannot report load", xdslog.KeyCluster, p.Leaf, xdslog.KeyError, err)
				}
			}
		}
	}
}

func (l *Reporter) ensureFor(cluster string) error {
	servers := l.cfg.Servers
	if strings.HasPrefix(cluster, "xdstp:") {
		n, err := resources.ParseName(cluster)
		if err != nil {
			return err
		}
		if servers, err = l.cfg.ServersForAuthority(n.Authority); err != nil {
			return err
		}
	}
	if len(servers) == 0 {
		return fmt.Errorf("no management server in the bootstrap")
	}
	sc := servers[0] // the server the cluster came from, unless fallback is in use (gRFC A71)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refs == 0 || l.clients[sc.ServerURI] != nil {
		return nil
	}
	t, err := l.builder.Build(sc, transport.BuildOptions{Logger: l.logger.With(xdslog.KeyServerURI, sc.ServerURI)})
	if err != nil {
		return fmt.Errorf("transport to %s: %w", sc.ServerURI, err)
	}
	if l.clients == nil {
		l.clients = make(map[string]*lrsConn)
	}
	l.clients[sc.ServerURI] = &lrsConn{t: t, c: lrs.NewClient(lrsStreams{t}, l.cfg.Node.Proto(), l.store, lrs.WithLogger(l.logger.With(xdslog.KeyLRSServer, sc.ServerURI)))}
	return nil
}

// Release undoes an Acquire; the last one sends the final reports and
// closes the LRS clients (a later Acquire starts them again on need).
func (l *Reporter) Release() {
	l.mu.Lock()
	l.refs--
	if l.refs > 0 {
		l.mu.Unlock()
		return
	}
	clients := l.clients
	l.clients = nil
	l.mu.Unlock()
	for _, c := range clients {
		c.c.Close()
		c.t.Close()
	}
}
