// SPDX-License-Identifier: Apache-2.0

package xdsresolver

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

// loadReporter reports the load of the channels of one Builder: a
// Store fed by their routers' pickers, and one lrs.Client per management
// server that a cluster with lrs_server "self" came from, started on
// first need and closed, after a final report, when the last resolver
// using it is closed. Safe for concurrent use.
type loadReporter struct {
	store   *lrs.Store
	builder transport.Builder
	cfg     *bootstrap.Config
	logger  *slog.Logger

	mu      sync.Mutex
	clients map[string]*lrsConn // by server URI
	refs    int                 // resolvers using it
}

// acquire notes a resolver using l; release it when the resolver closes.
func (l *loadReporter) acquire() {
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

// ensure starts reporting to the management server of every leaf cluster
// of cfg with lrs_server "self", if not done yet.
func (l *loadReporter) ensure(cfg *dataplane.Config) {
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

func (l *loadReporter) ensureFor(cluster string) error {
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

// release undoes an acquire; the last one sends the final reports and
// closes the LRS clients (a later acquire starts them again on need).
func (l *loadReporter) release() {
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
