// SPDX-License-Identifier: Apache-2.0

package file

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// stream answers the client's DiscoveryRequests from the source. Send and
// Recv run on different goroutines; mu guards what they share.
type stream struct {
	// Initialized at creation time and read-only afterwards.
	t         *Transport
	ctx       context.Context // ends with the client's stream or Transport.Close
	cancel    context.CancelFunc
	requested chan struct{}   // cap 1: Send signals Recv
	changes   <-chan struct{} // the source may have changed

	mu sync.Mutex
	// Guarded by mu.
	names map[string][]string // type URL → resource_names of its last request
	force map[string]bool     // type URL → a request asks for a response

	// Only accessed by Recv.
	snap     *snapshot         // the last good load; nil before one
	loadErr  error             // the load error to return from Recv
	nonce    int               // last nonce sent
	sent     map[string]string // type URL → version_info last sent
	everSent map[string]bool   // type URL → a response was sent on this stream
	received bool              // a response was returned by Recv
}

// Send reads one DiscoveryRequest. A request asks for a response when it
// is the first of its type on the stream or changes the type's
// resource_names; ACKs and NACKs only record the answer (a NACK's
// error_detail shows in the client's Dump and logs; the file is not
// changed by it).
func (s *stream) Send(b []byte) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	req := &v3discoverypb.DiscoveryRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return fmt.Errorf("file: decoding DiscoveryRequest: %w", err)
	}
	t := req.GetTypeUrl()
	s.mu.Lock()
	prev, seen := s.names[t]
	if !seen || req.GetResponseNonce() == "" || !slices.Equal(prev, req.GetResourceNames()) {
		s.force[t] = true
	}
	s.names[t] = req.GetResourceNames()
	s.mu.Unlock()
	select {
	case s.requested <- struct{}{}:
	default:
	}
	return nil
}

// Recv returns the next response owed: for each requested type (in type
// URL order), the source's current resources when they changed since the
// last response of the type on this stream or a request asked for them.
// When the source cannot be loaded, Recv returns the error (see the
// package doc, Errors).
func (s *stream) Recv() ([]byte, error) {
	for {
		if s.loadErr != nil {
			return nil, s.loadErr
		}
		if b := s.nextResponse(); b != nil {
			s.received = true
			return b, nil
		}
		select {
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		case <-s.requested:
		case <-s.changes:
			s.reload()
		}
	}
}

// reload reads the source. A good load replaces the snapshot. A failed
// load ends the stream when it received responses (the client opens a
// new one without reporting, R-11.2, and the next stream reports the
// error), and
// otherwise is returned by Recv, unless the Transport reported the same
// error already: then the stream waits for the next change, so that the
// client's backoff does not delay picking up a fixed source.
func (s *stream) reload() {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	snap, err := s.t.loader.load(s.ctx)
	if err == nil {
		s.t.reported = ""
		if s.snap == nil || s.snap.digest != snap.digest {
			s.snap = snap
		}
		return
	}
	if s.received {
		s.loadErr = err
		return
	}
	if err.Error() == s.t.reported {
		return
	}
	s.t.reported = err.Error()
	s.loadErr = err
}

// requested returns the resources of res the subscription wants: all of
// them for a wildcard subscription or when their names are unknown
// (names nil); otherwise those named in want, and those whose name is
// unknown (the client sorts them out). Sending only what is requested is
// what a management server does; it spares the client resources it would
// ignore.
func requested(res []*anypb.Any, names, want []string) []*anypb.Any {
	if names == nil || slices.Contains(want, "*") {
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

// nextResponse returns the next response owed, serialized, or nil.
func (s *stream) nextResponse() []byte {
	if s.snap == nil {
		return nil
	}
	s.mu.Lock()
	types := make([]string, 0, len(s.names))
	for t := range s.names {
		types = append(types, t)
	}
	slices.Sort(types)
	var resp *v3discoverypb.DiscoveryResponse
	for _, t := range types {
		cur := s.snap.byType[t]
		if cur == nil && !s.everSent[t] {
			continue // nothing of the type: the client's does-not-exist timer decides
		}
		version := cur.GetVersionInfo()
		if !s.force[t] && s.sent[t] == version {
			continue
		}
		delete(s.force, t)
		s.sent[t] = version
		s.everSent[t] = true
		s.nonce++
		resp = &v3discoverypb.DiscoveryResponse{
			VersionInfo: version,
			Resources:   requested(cur.GetResources(), s.snap.names[t], s.names[t]),
			TypeUrl:     t,
			Nonce:       strconv.Itoa(s.nonce),
		}
		break
	}
	s.mu.Unlock()
	if resp == nil {
		return nil
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		s.loadErr = fmt.Errorf("file: marshalling the %s response: %w", resp.GetTypeUrl(), err)
		return nil
	}
	return b
}
