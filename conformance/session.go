// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/pertype"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
)

// This file is the kit's own xDS client: it sends exactly the requests a
// check asks for, as a broken or unusual client would, and lets the check
// wait for the responses of a type with a deadline. It keeps no protocol
// state beyond what a check needs to write its next request (the last
// nonce received, the last version ACKed, the names of the last SotW
// request), so every ACK, NACK and nonce on the wire is the check's.

// errNotAnswered is wrapped by the error of a wait for a response that
// did not come in time.
var errNotAnswered = errors.New("not answered")

// response is one response of a stream, decoded.
type response struct {
	typeURL string
	sotw    *v3discoverypb.DiscoveryResponse      // SotW and REST
	delta   *v3discoverypb.DeltaDiscoveryResponse // delta
	// version is the SotW version_info, or the delta system_version_info.
	version string
	nonce   string
	// names are the names of the resources, in response order; a
	// resource whose name cannot be found has "".
	names []string
	// versions are the delta resources' versions, by name.
	versions map[string]string
	removed  []string
	size     int // bytes on the wire (REST: of the JSON body)
}

// has reports whether r carries a resource named name.
func (r *response) has(name string) bool { return slices.Contains(r.names, name) }

// hasVersion reports whether r, a delta response, carries name at
// version.
func (r *response) hasVersion(name, version string) bool {
	v, ok := r.versions[name]
	return ok && v == version
}

func (r *response) wasRemoved(name string) bool { return slices.Contains(r.removed, name) }

// describe renders r for a detail: its version and names.
func (r *response) describe() string {
	if r.delta != nil {
		return fmt.Sprintf("resources %s, removed_resources %s", nameList(r.names), nameList(r.removed))
	}
	return fmt.Sprintf("version_info %q with %s", r.version, nameList(r.names))
}

// nameList renders names for a detail: [a b], or [] when empty.
func nameList(names []string) string { return "[" + strings.Join(names, " ") + "]" }

// wireStream is one gRPC stream of a session.
type wireStream struct {
	st       transport.Stream
	typeURL  string // a per-type stream's type; "" for ADS
	cancel   context.CancelFunc
	sentNode bool // only the session's goroutine touches it

	// Guarded by session.mu.
	requested map[string]bool // type URLs requested on the stream
	nonces    map[string]bool // nonces of responses received on it
}

// typeState is what a check's session remembers of one type, to write
// its next request.
type typeState struct {
	names   []string // the names of the last SotW request
	version string   // the version_info last ACKed (SotW)
	nonce   string   // the nonce of the last response consumed
}

// session is one client of the server: an ADS stream, or one stream per
// type, of one variant. Its methods, but for the reader goroutines it
// owns, are called from one goroutine (the check's).
type session struct {
	k      *kit
	v      Variant
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the readers

	// Only accessed from the check's goroutine.
	streams map[string]*wireStream // by type URL; "" for the ADS stream
	state   map[string]*typeState

	// Guarded by mu.
	mu      sync.Mutex
	queue   map[string][]*response // by type URL, oldest first
	errs    map[string]error       // stream errors, by stream key
	changed chan struct{}          // closed and replaced when queue or errs change
}

func (k *kit) newSession(ctx context.Context, v Variant) *session {
	ctx, cancel := context.WithCancel(ctx)
	return &session{
		k: k, v: v, ctx: ctx, cancel: cancel,
		streams: make(map[string]*wireStream),
		state:   make(map[string]*typeState),
		queue:   make(map[string][]*response),
		errs:    make(map[string]error),
		changed: make(chan struct{}),
	}
}

// close ends the session's streams and waits for its readers.
func (s *session) close() {
	s.cancel()
	s.wg.Wait()
}

func (s *session) st(typeURL string) *typeState {
	ts := s.state[typeURL]
	if ts == nil {
		ts = &typeState{}
		s.state[typeURL] = ts
	}
	return ts
}

// streamKey is the key of the stream that carries typeURL.
func (s *session) streamKey(typeURL string) string {
	if s.v.perType() {
		return typeURL
	}
	return ""
}

// stream returns the stream that carries typeURL, opening it on first
// use.
func (s *session) stream(typeURL string) (*wireStream, error) {
	key := s.streamKey(typeURL)
	if ws := s.streams[key]; ws != nil {
		return ws, nil
	}
	method := transport.ADSMethod
	if s.v.delta() {
		method = transport.DeltaADSMethod
	}
	if s.v.perType() {
		svc, ok := pertype.DefaultServices()[typeURL]
		if !ok {
			return nil, fmt.Errorf("no per-type service for %s", typeURL)
		}
		method = svc.Stream
		if s.v.delta() {
			method = svc.Delta
		}
	}
	ctx, cancel := context.WithCancel(s.ctx)
	st, err := s.k.tr.NewStream(ctx, method)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("opening %s: %w", method, err)
	}
	ws := &wireStream{st: st, typeURL: key, cancel: cancel, requested: make(map[string]bool), nonces: make(map[string]bool)}
	s.streams[key] = ws
	s.wg.Add(1)
	go s.read(ws, key)
	return ws, nil
}

// read receives the responses of ws until it fails, decodes them, shows
// them to the kit's response checks and queues them by type URL.
func (s *session) read(ws *wireStream, key string) {
	defer s.wg.Done()
	for {
		b, err := ws.st.Recv()
		if err != nil {
			s.mu.Lock()
			if s.ctx.Err() == nil {
				s.k.obs.streamError(s.v, err)
			}
			s.errs[key] = err
			s.notifyLocked()
			s.mu.Unlock()
			return
		}
		r := s.decode(b)
		s.mu.Lock()
		if r != nil {
			s.k.obs.observe(s.v, r, ws)
			s.queue[r.typeURL] = append(s.queue[r.typeURL], r)
			s.notifyLocked()
		}
		s.mu.Unlock()
	}
}

// decode decodes one message of the session's variant; nil when it does
// not decode (the response checks note it).
func (s *session) decode(b []byte) *response {
	if s.v.delta() {
		m := &v3discoverypb.DeltaDiscoveryResponse{}
		if err := proto.Unmarshal(b, m); err != nil {
			s.k.obs.undecodable(s.v, err)
			return nil
		}
		return deltaResponse(m, len(b))
	}
	m := &v3discoverypb.DiscoveryResponse{}
	if err := proto.Unmarshal(b, m); err != nil {
		s.k.obs.undecodable(s.v, err)
		return nil
	}
	return sotwResponse(m, len(b))
}

func sotwResponse(m *v3discoverypb.DiscoveryResponse, size int) *response {
	r := &response{typeURL: m.GetTypeUrl(), sotw: m, version: m.GetVersionInfo(), nonce: m.GetNonce(), size: size}
	for _, a := range m.GetResources() {
		name, _, _ := resourceName(a)
		r.names = append(r.names, name)
	}
	return r
}

func deltaResponse(m *v3discoverypb.DeltaDiscoveryResponse, size int) *response {
	r := &response{
		typeURL: m.GetTypeUrl(), delta: m, version: m.GetSystemVersionInfo(), nonce: m.GetNonce(),
		versions: make(map[string]string), removed: m.GetRemovedResources(), size: size,
	}
	for _, res := range m.GetResources() {
		r.names = append(r.names, res.GetName())
		r.versions[res.GetName()] = res.GetVersion()
	}
	return r
}

func (s *session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// send sends req, a *DiscoveryRequest or *DeltaDiscoveryRequest, on the
// stream of its type, with the node when it is the stream's first.
func (s *session) send(typeURL string, req proto.Message) error {
	ws, err := s.stream(typeURL)
	if err != nil {
		return err
	}
	if !ws.sentNode {
		switch r := req.(type) {
		case *v3discoverypb.DiscoveryRequest:
			r.Node = s.k.cfg.Node
		case *v3discoverypb.DeltaDiscoveryRequest:
			r.Node = s.k.cfg.Node
		}
		ws.sentNode = true
	}
	b, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("encoding a request: %w", err)
	}
	s.mu.Lock()
	ws.requested[typeURL] = true
	s.mu.Unlock()
	if err := ws.st.Send(b); err != nil {
		return fmt.Errorf("sending a %s request: %w", typeName(typeURL), err)
	}
	return nil
}

// sotw sends a SotW request for names, with the last version ACKed and
// the last nonce received; the names become the type's.
func (s *session) sotw(typeURL string, names ...string) error {
	ts := s.st(typeURL)
	ts.names = names
	return s.send(typeURL, &v3discoverypb.DiscoveryRequest{
		TypeUrl: typeURL, ResourceNames: names, VersionInfo: ts.version, ResponseNonce: ts.nonce,
	})
}

// ack ACKs r, a SotW response, with the type's names; in delta, with r's
// nonce.
func (s *session) ack(r *response) error {
	ts := s.st(r.typeURL)
	if r.delta != nil {
		return s.send(r.typeURL, &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: r.typeURL, ResponseNonce: r.nonce})
	}
	ts.version = r.version
	return s.send(r.typeURL, &v3discoverypb.DiscoveryRequest{
		TypeUrl: r.typeURL, ResourceNames: ts.names, VersionInfo: r.version, ResponseNonce: r.nonce,
	})
}

// nackDetail is the error_detail of the kit's NACKs.
var nackDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: "xDS conformance kit: NACK on purpose"}

// nack NACKs r: SotW with the version last ACKed and the type's names.
func (s *session) nack(r *response) error {
	ts := s.st(r.typeURL)
	if r.delta != nil {
		return s.send(r.typeURL, &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: r.typeURL, ResponseNonce: r.nonce, ErrorDetail: nackDetail})
	}
	return s.send(r.typeURL, &v3discoverypb.DiscoveryRequest{
		TypeUrl: r.typeURL, ResourceNames: ts.names, VersionInfo: ts.version, ResponseNonce: r.nonce, ErrorDetail: nackDetail,
	})
}

// subscribe sends a delta request that changes the subscription only,
// without a nonce (as this library's client does, R-6.2).
func (s *session) subscribe(typeURL string, sub, unsub []string) error {
	return s.send(typeURL, &v3discoverypb.DeltaDiscoveryRequest{
		TypeUrl: typeURL, ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub,
	})
}

// wait returns the next response of typeURL, waiting at most d: nil when
// none came, an error when the stream carrying the type ended. The
// response's nonce becomes the type's.
func (s *session) wait(typeURL string, d time.Duration) (*response, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	key := s.streamKey(typeURL)
	for {
		s.mu.Lock()
		if q := s.queue[typeURL]; len(q) > 0 {
			r := q[0]
			s.queue[typeURL] = q[1:]
			s.mu.Unlock()
			s.st(typeURL).nonce = r.nonce
			return r, nil
		}
		if err := s.errs[key]; err != nil {
			s.mu.Unlock()
			return nil, streamEnded(err)
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return nil, nil
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
}

// next returns the next response of typeURL, which must come within
// Config.Timeout.
func (s *session) next(typeURL string) (*response, error) {
	r, err := s.wait(typeURL, s.k.cfg.Timeout)
	if err == nil && r == nil {
		err = fmt.Errorf("%w within %v", errNotAnswered, s.k.cfg.Timeout)
	}
	return r, err
}

// until receives responses of typeURL until done says the ones so far
// are enough, for at most Config.Timeout, ACKing each when ack is set. It
// returns the responses received; the error of a stream that ended, or
// one wrapping errNotAnswered when done never said so.
func (s *session) until(typeURL string, ack bool, done func(got []*response) bool) ([]*response, error) {
	deadline := time.Now().Add(s.k.cfg.Timeout)
	var got []*response
	for !done(got) {
		left := time.Until(deadline)
		if left <= 0 {
			return got, fmt.Errorf("%w within %v", errNotAnswered, s.k.cfg.Timeout)
		}
		r, err := s.wait(typeURL, left)
		if err != nil {
			return got, err
		}
		if r == nil {
			continue
		}
		got = append(got, r)
		if ack {
			if err := s.ack(r); err != nil {
				return got, err
			}
		}
	}
	return got, nil
}

// settle waits Config.Quiet, then returns every response that arrived
// meanwhile, of the given types, in arrival order per type, ACKing each
// when ack is set.
func (s *session) settle(ack bool, typeURLs ...string) ([]*response, error) {
	timer := time.NewTimer(s.k.cfg.Quiet)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
	var got []*response
	for _, t := range typeURLs {
		for {
			r, err := s.wait(t, 0)
			if err != nil {
				return got, err
			}
			if r == nil {
				break
			}
			got = append(got, r)
			if ack {
				if err := s.ack(r); err != nil {
					return got, err
				}
			}
		}
	}
	return got, nil
}

// streamEnded wraps the error that ended a stream for a detail.
func streamEnded(err error) error {
	return fmt.Errorf("the stream ended: %w", err)
}

// unimplemented reports whether err says the server does not implement
// the stream's service.
func unimplemented(err error) bool {
	return status.Code(err) == codes.Unimplemented
}

// union returns the names of every response in rs, once each, sorted.
func union(rs []*response) []string {
	var names []string
	for _, r := range rs {
		for _, n := range r.names {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// removedIn returns the names in removed_resources of every response in
// rs, once each, sorted.
func removedIn(rs []*response) []string {
	var names []string
	for _, r := range rs {
		for _, n := range r.removed {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// covers reports whether got holds every name of want.
func covers(got, want []string) bool {
	for _, n := range want {
		if !slices.Contains(got, n) {
			return false
		}
	}
	return true
}

// missing returns the names of want that got lacks.
func missing(got, want []string) []string {
	var out []string
	for _, n := range want {
		if !slices.Contains(got, n) {
			out = append(out, n)
		}
	}
	return out
}

// extra returns the names of got that want lacks, once each.
func extra(got, want []string) []string {
	var out []string
	for _, n := range got {
		if !slices.Contains(want, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// intersect returns the names of a that b has too.
func intersect(a, b []string) []string {
	var out []string
	for _, n := range a {
		if slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// protoSotW is a SotW request written out in full.
func protoSotW(typeURL, version, nonce string, names ...string) *v3discoverypb.DiscoveryRequest {
	return &v3discoverypb.DiscoveryRequest{TypeUrl: typeURL, VersionInfo: version, ResponseNonce: nonce, ResourceNames: names}
}

// protoDeltaSub is a delta request that subscribes to names and carries
// nonce.
func protoDeltaSub(typeURL, nonce string, names ...string) *v3discoverypb.DeltaDiscoveryRequest {
	return &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL, ResponseNonce: nonce, ResourceNamesSubscribe: names}
}

// protoDeltaInitial is the first delta request of a type on a stream,
// with the versions the client has.
func protoDeltaInitial(typeURL string, names []string, initial map[string]string) *v3discoverypb.DeltaDiscoveryRequest {
	return &v3discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: names, InitialResourceVersions: initial}
}
