// SPDX-License-Identifier: Apache-2.0

package serving

import (
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/proxyless/xds/internal/handshake"
	"github.com/proxyless/xds/internal/xdslog"
	"github.com/proxyless/xds/resources"
)

// ChainServer is the protocol's server of one chain's connections: a
// grpc.Server, an http.Server.
type ChainServer interface {
	// Serve serves the connections of l until l is closed or the server
	// stopped.
	Serve(l net.Listener) error
	// GracefulStop tells every connection to go away (a GOAWAY,
	// "Connection: close") and returns once they are all closed, or once
	// Stop is called.
	GracefulStop()
	// Stop closes every connection.
	Stop()
}

// Runner runs the ChainServer of one chain on the connections the
// Listener delivers to it, and retires it. It is the part of a Chain
// that does not depend on the protocol.
type Runner struct {
	// Initialized at creation time and read-only afterwards.
	o      RunnerOptions
	srv    ChainServer
	lis    *ConnListener
	served chan struct{} // closed when srv.Serve has returned

	retireOnce sync.Once
}

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	// Addr is the address of the listening socket, the Addr of the
	// chain's listener.
	Addr net.Addr
	// Label names the chain in messages (filterchain.Label).
	Label string
	// Logger logs the end of the drain grace time (Debug).
	Logger *slog.Logger
	// WG is the server's wait group: the Runner's goroutines are in it.
	WG *sync.WaitGroup
	// HardStop, when closed, ends drains at once (the server is closed).
	HardStop <-chan struct{}
	// Release runs once the chain's connections are gone, after a
	// retirement (nil: nothing).
	Release func()
}

// Run starts serving srv on a ConnListener of its own, on a goroutine of
// o.WG.
func Run(srv ChainServer, o RunnerOptions) *Runner {
	r := &Runner{o: o, srv: srv, lis: NewConnListener(o.Addr), served: make(chan struct{})}
	o.WG.Add(1)
	go func() {
		defer o.WG.Done()
		defer close(r.served)
		_ = srv.Serve(r.lis) // returns once lis is closed or srv stopped
	}()
	return r
}

// Deliver hands c to the chain's server; false when it is retired (the
// caller closes c).
func (r *Runner) Deliver(c net.Conn) bool { return r.lis.Deliver(c) }

// Retire drains the chain (Chain.Retire): new connections no longer come
// to it; its server is gracefully stopped and stopped when grace (if not
// zero) passes or HardStop is closed; hard stops it at once. Release runs
// when its connections are gone. It does not block; o.WG tracks the
// drain.
func (r *Runner) Retire(grace time.Duration, hard bool) {
	r.retireOnce.Do(func() {
		r.o.WG.Add(1)
		go func() {
			defer r.o.WG.Done()
			r.lis.Close()
			if hard {
				r.srv.Stop()
			} else {
				r.drain(grace)
			}
			<-r.served
			if r.o.Release != nil {
				r.o.Release()
			}
		}()
	})
}

// drain gracefully stops the server, and stops it when grace (if not
// zero) passes or the server is closed.
func (r *Runner) drain(grace time.Duration) {
	done := make(chan struct{})
	r.o.WG.Add(1)
	go func() {
		defer r.o.WG.Done()
		defer close(done)
		r.srv.GracefulStop()
	}()
	var timeout <-chan time.Time
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-done:
		return
	case <-timeout:
		r.o.Logger.Debug("drain grace time over: closing the remaining connections", xdslog.KeyFilterChain, r.o.Label, xdslog.KeyGrace, grace)
	case <-r.o.HardStop:
	}
	r.srv.Stop()
	<-done
}

// ChainTLS acquires the certificate providers of fc's
// DownstreamTlsContext: nil, nil for a chain without one. On error (the
// chain's TLS handshakes will fail with it), it logs a warning naming the
// chain, labelled label.
func ChainTLS(fc *resources.FilterChain, label string, acquire handshake.Acquire, logger *slog.Logger) (*handshake.ServerHandshakeInfo, error) {
	if fc.Security == nil {
		return nil, nil
	}
	hi, err := handshake.NewServerHandshakeInfo(strconv.Quote(fc.Name), fc.Security, acquire)
	if err != nil {
		logger.Warn("the TLS handshakes of a filter chain will fail", xdslog.KeyFilterChain, label, xdslog.KeyError, err)
	}
	return hi, err
}
