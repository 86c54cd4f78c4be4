// SPDX-License-Identifier: Apache-2.0

package file

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// stream answers the client's requests of one type from the source's last
// load. Send and Recv run on different goroutines; mu guards what they
// share.
type stream struct {
	// Initialized at creation time and read-only afterwards.
	t         *Transport
	typeURL   string
	ctx       context.Context // ends with the client's stream or Transport.Close
	requested chan struct{}   // cap 1: Send signals Recv

	mu sync.Mutex
	// Guarded by mu.
	names  []string // resource_names of the last request
	gotReq bool     // a request was received
	force  bool     // a request asks for a response

	// Only accessed by Recv.
	sent     string // version_info last sent; "" before the first response
	everSent bool   // a response was sent
	received bool   // a response was returned by Recv
}

// Send records one request. A request asks for a response when it is the
// stream's first, changes resource_names, or only changes the subscription;
// ACKs and NACKs only record the answer (a NACK's error_detail shows in
// the client's Dump and logs; the file is not changed by it).
func (s *stream) Send(r *transport.Request) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	req := r.SotW
	if req == nil || req.GetTypeUrl() != s.typeURL {
		return fmt.Errorf("file: a %s stream got a request of another kind", s.typeURL)
	}
	s.mu.Lock()
	if !s.gotReq || !r.Answer || !slices.Equal(s.names, req.GetResourceNames()) {
		s.force = true
	}
	s.gotReq = true
	s.names = req.GetResourceNames()
	s.mu.Unlock()
	select {
	case s.requested <- struct{}{}:
	default:
	}
	return nil
}

// Recv returns the next response owed: the source's current resources of
// the type when they changed since the last response on this stream or a
// request asked for them. When the last load of the source failed, Recv
// returns the error (see reloadErr).
func (s *stream) Recv() (*transport.Response, error) {
	t := s.t
	for {
		t.mu.Lock()
		snap, changed := t.snap, t.changed
		err := s.loadErrLocked()
		t.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if resp := s.nextResponse(snap); resp != nil {
			s.received = true
			return &transport.Response{SotW: resp}, nil
		}
		select {
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		case <-s.requested:
		case <-changed:
		}
	}
}

// loadErrLocked returns the error of the source's last load for Recv to
// end the stream with, or nil. A failed load ends a stream that returned
// responses (the client opens a new one without reporting, R-11.2, and
// that one reports the error). A stream that returned nothing fails with
// the error unless a stream of its type reported the same error already:
// it then waits for the next change, so that the client's backoff does
// not delay picking up a fixed source. Called with t.mu held.
func (s *stream) loadErrLocked() error {
	t := s.t
	err := t.loadErr
	if err == nil {
		return nil
	}
	if s.received {
		return err
	}
	if err.Error() == t.reported[s.typeURL] {
		return nil
	}
	t.reported[s.typeURL] = err.Error()
	return err
}

// nextResponse returns the response owed from snap, or nil.
func (s *stream) nextResponse(snap *snapshot) *v3discoverypb.DiscoveryResponse {
	if snap == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.gotReq {
		return nil
	}
	cur := snap.byType[s.typeURL]
	if cur == nil && !s.everSent {
		return nil // nothing of the type: the client's does-not-exist timer decides
	}
	version := cur.GetVersionInfo()
	if !s.force && s.everSent && s.sent == version {
		return nil
	}
	s.force = false
	s.sent, s.everSent = version, true
	return &v3discoverypb.DiscoveryResponse{
		VersionInfo: version,
		Resources:   requested(cur.GetResources(), snap.names[s.typeURL], s.names),
		TypeUrl:     s.typeURL,
	}
}

// requested returns the resources of res the subscription want asks for:
// all of them for the wildcard (an empty list, its legacy form, or "*")
// or when their names are unknown (names nil); otherwise those named in
// want, and those whose name is unknown (the client sorts them out).
// Sending only what is requested is what a management server does; it
// spares the client resources it would ignore.
func requested(res []*anypb.Any, names, want []string) []*anypb.Any {
	if names == nil || len(want) == 0 || slices.Contains(want, "*") {
		return res
	}
	wanted := make(map[string]bool, len(want))
	for _, n := range want {
		wanted[n] = true
	}
	out := make([]*anypb.Any, 0, len(want))
	for i, a := range res {
		if names[i] == "" || wanted[names[i]] {
			out = append(out, a)
		}
	}
	return out
}
