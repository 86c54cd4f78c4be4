// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"context"
	"fmt"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Request is one request the server received: a DiscoveryRequest (Req)
// on a SotW stream, or a DeltaDiscoveryRequest (Delta) on a delta stream. Its fields must not
// be modified: the same value is returned by every accessor.
type Request struct {
	// StreamID identifies the stream: 1 for the first stream the server
	// accepted, then 2, 3, ... (server-wide; streams refused by
	// RejectStreams get none). It is 0 for a REST-JSON poll
	// (RESTHandler), which belongs to no stream.
	StreamID int64
	// Node is the stream's node, from its first request (nil if that
	// request had none), whether or not Req carries it.
	Node *v3corepb.Node
	// Req is the request as received on a SotW stream; nil for a delta
	// request.
	Req *v3discoverypb.DiscoveryRequest
	// Delta is the request as received on a delta stream; nil for a SotW
	// request.
	Delta *v3discoverypb.DeltaDiscoveryRequest
}

// recordRequest appends r to the log and wakes NextRequest callers. It is
// called before the server acts on the request. With
// Options.OnRequest, r is given to it instead.
func (ms *Server) recordRequest(r *Request) {
	if f := ms.opts.OnRequest; f != nil {
		f(r)
		return
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.requests = append(ms.requests, r)
	close(ms.requestAdded)
	ms.requestAdded = make(chan struct{})
}

// Requests returns every request received so far, in arrival order. The
// slice is a copy the caller owns; the Requests are shared. It does not
// consume anything from the FIFO of NextRequest.
func (ms *Server) Requests() []*Request {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]*Request(nil), ms.requests...)
}

// NextRequest returns the oldest request that NextRequest and
// WaitForRequest have not yet returned (a FIFO over all streams, in
// arrival order), blocking until one arrives. It returns an error wrapping
// ctx.Err() if ctx ends first; a request already waiting is returned even
// if ctx is done.
func (ms *Server) NextRequest(ctx context.Context) (*Request, error) {
	for {
		ms.mu.Lock()
		if ms.consumed < len(ms.requests) {
			r := ms.requests[ms.consumed]
			ms.consumed++
			ms.mu.Unlock()
			return r, nil
		}
		added := ms.requestAdded
		ms.mu.Unlock()
		select {
		case <-added:
		case <-ctx.Done():
			return nil, fmt.Errorf("mgmtserver: waiting for a request: %w", ctx.Err())
		}
	}
}

// WaitForRequest consumes requests from the FIFO of NextRequest until
// match returns true, and returns that request; the requests that did not
// match are consumed too. match is called on the caller's goroutine, with
// no lock held. It returns an error wrapping ctx.Err() if ctx ends first.
func (ms *Server) WaitForRequest(ctx context.Context, match func(*Request) bool) (*Request, error) {
	for {
		r, err := ms.NextRequest(ctx)
		if err != nil {
			return nil, err
		}
		if match(r) {
			return r, nil
		}
	}
}

// SendResponse queues a copy of resp on the newest open SotW stream (the
// one with the highest StreamID among SotW streams), waiting until a stream is open or ctx ends.
// If resp.Nonce is "", the copy gets a fresh nonce, unique on this server;
// SendResponse returns the nonce of the copy. Scripted responses and the
// server's own share one queue per stream and go out in the order they
// were queued. A scripted response does not change what the server
// considers sent from snapshots. It works whether or not the server is
// Manual. It returns an error wrapping
// ctx.Err() if ctx ends first, or an error if the server was stopped.
func (ms *Server) SendResponse(ctx context.Context, resp *v3discoverypb.DiscoveryResponse) (nonce string, err error) {
	return sendScriptedTo(ctx, ms, "stream", ms.streams, resp,
		func(r *v3discoverypb.DiscoveryResponse, nonce string) { r.Nonce = nonce })
}
