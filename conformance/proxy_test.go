// SPDX-License-Identifier: Apache-2.0

package conformance_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/transport"

	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// This file is the scripted server of the kit's tests: testutil's
// management server behind a proxy that breaks one rule of R-28 (a
// misbehaviour), so that each check can be seen to fail against a server
// that breaks exactly what it checks.

// misbehaviour changes what crosses the proxy. Each hook runs with the
// stream's lock held, sees the type's state as it was before the message
// (the proxy records the message after the hook), may modify the message
// and inject responses (streamState.inject), and returns whether the
// message goes on.
type misbehaviour struct {
	sotwReq   func(ps *proxyStream, ts *proxyType, req *v3discoverypb.DiscoveryRequest) bool
	sotwResp  func(ps *proxyStream, ts *proxyType, resp *v3discoverypb.DiscoveryResponse) bool
	deltaReq  func(ps *proxyStream, ts *proxyType, req *v3discoverypb.DeltaDiscoveryRequest) bool
	deltaResp func(ps *proxyStream, ts *proxyType, resp *v3discoverypb.DeltaDiscoveryResponse) bool
	// restReq may change a poll; a status other than 0 answers it with
	// that status instead. restResp may change a 200's response.
	restReq  func(req *v3discoverypb.DiscoveryRequest) int
	restResp func(resp *v3discoverypb.DiscoveryResponse)
}

// proxy is a transport.Transport that puts a misbehaviour between the kit
// and inner. It is armed once the first stream it opened has ended: the
// kit's discovery, which must see the server as it is.
type proxy struct {
	inner transport.Transport
	m     *misbehaviour

	opened atomic.Int64
	armed  atomic.Bool
	nonce  atomic.Int64 // of injected responses
}

func (p *proxy) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	st, err := p.inner.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	ps := &proxyStream{
		p: p, inner: st, delta: strings.Contains(method, "/Delta"), first: p.opened.Add(1) == 1,
		ready: make(chan struct{}, 1), types: make(map[string]*proxyType),
	}
	go ps.pump()
	return ps, nil
}

func (p *proxy) Close() {}

// proxyType is what a proxy stream knows of one type.
type proxyType struct {
	requests     int      // requests forwarded
	names        []string // SotW: names of the last request forwarded
	everNamed    []string // SotW: every name requested
	nacked       bool     // a NACK was forwarded
	nonces       []string // nonces of the responses delivered, oldest first
	lastSotW     *v3discoverypb.DiscoveryResponse
	lastDelta    *v3discoverypb.DeltaDiscoveryResponse
	delivered    map[string][]byte     // name → the resource as last delivered (SotW: its bytes; delta: its version)
	firstVersion map[string]string     // delta: name → the first version delivered; SotW: "" → the first version_info
	seen         map[string]*anypb.Any // SotW: every resource delivered, by name
}

func (ts *proxyType) lastNonce() string {
	if len(ts.nonces) == 0 {
		return ""
	}
	return ts.nonces[len(ts.nonces)-1]
}

// proxyStream is one stream through the proxy.
type proxyStream struct {
	p     *proxy
	inner transport.Stream
	delta bool
	first bool // the first stream the proxy opened

	ready chan struct{} // cap 1: signalled when out grows

	// Guarded by mu.
	mu    sync.Mutex
	types map[string]*proxyType
	out   [][]byte // responses for the kit
	err   error    // the inner stream's end, after out
}

func (ps *proxyStream) typeState(typeURL string) *proxyType {
	ts := ps.types[typeURL]
	if ts == nil {
		ts = &proxyType{delivered: make(map[string][]byte), firstVersion: make(map[string]string), seen: make(map[string]*anypb.Any)}
		ps.types[typeURL] = ts
	}
	return ts
}

func (ps *proxyStream) armed() bool { return ps.p.armed.Load() }

// injectLocked queues resp for the kit, with a nonce of the proxy's when
// it has none.
func (ps *proxyStream) injectLocked(resp proto.Message) {
	switch r := resp.(type) {
	case *v3discoverypb.DiscoveryResponse:
		r.Nonce = fmt.Sprintf("proxy-%d", ps.p.nonce.Add(1))
		ps.deliveredSotWLocked(r)
	case *v3discoverypb.DeltaDiscoveryResponse:
		r.Nonce = fmt.Sprintf("proxy-%d", ps.p.nonce.Add(1))
		ps.deliveredDeltaLocked(r)
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		panic(err)
	}
	ps.out = append(ps.out, b)
	select {
	case ps.ready <- struct{}{}:
	default:
	}
}

func (ps *proxyStream) deliveredSotWLocked(r *v3discoverypb.DiscoveryResponse) {
	ts := ps.typeState(r.GetTypeUrl())
	ts.nonces = append(ts.nonces, r.GetNonce())
	ts.lastSotW = proto.Clone(r).(*v3discoverypb.DiscoveryResponse)
	if _, ok := ts.firstVersion[""]; !ok {
		ts.firstVersion[""] = r.GetVersionInfo()
	}
	for _, a := range r.GetResources() {
		name := nameOf(a)
		ts.delivered[name] = a.GetValue()
		ts.seen[name] = a
	}
}

func (ps *proxyStream) deliveredDeltaLocked(r *v3discoverypb.DeltaDiscoveryResponse) {
	ts := ps.typeState(r.GetTypeUrl())
	ts.nonces = append(ts.nonces, r.GetNonce())
	ts.lastDelta = proto.Clone(r).(*v3discoverypb.DeltaDiscoveryResponse)
	for _, res := range r.GetResources() {
		ts.delivered[res.GetName()] = []byte(res.GetVersion())
		if _, ok := ts.firstVersion[res.GetName()]; !ok {
			ts.firstVersion[res.GetName()] = res.GetVersion()
		}
	}
}

func (ps *proxyStream) Send(b []byte) error {
	ps.mu.Lock()
	var (
		m       proto.Message
		forward = true
	)
	if ps.delta {
		req := &v3discoverypb.DeltaDiscoveryRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			ps.mu.Unlock()
			return err
		}
		ts := ps.typeState(req.GetTypeUrl())
		if ps.armed() && ps.p.m.deltaReq != nil {
			forward = ps.p.m.deltaReq(ps, ts, req)
		}
		if forward {
			ts.requests++
			ts.nacked = ts.nacked || req.GetErrorDetail() != nil
		}
		m = req
	} else {
		req := &v3discoverypb.DiscoveryRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			ps.mu.Unlock()
			return err
		}
		ts := ps.typeState(req.GetTypeUrl())
		if ps.armed() && ps.p.m.sotwReq != nil {
			forward = ps.p.m.sotwReq(ps, ts, req)
		}
		if forward {
			ts.requests++
			ts.names = req.GetResourceNames()
			for _, n := range req.GetResourceNames() {
				if !slices.Contains(ts.everNamed, n) {
					ts.everNamed = append(ts.everNamed, n)
				}
			}
			ts.nacked = ts.nacked || req.GetErrorDetail() != nil
		}
		m = req
	}
	ps.mu.Unlock()
	if !forward {
		return nil
	}
	out, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return ps.inner.Send(out)
}

// pump moves the inner stream's responses to the kit through the
// misbehaviour until the inner stream ends.
func (ps *proxyStream) pump() {
	for {
		b, err := ps.inner.Recv()
		ps.mu.Lock()
		if err != nil {
			if ps.first {
				ps.p.armed.Store(true)
			}
			ps.err = err
			ps.mu.Unlock()
			select {
			case ps.ready <- struct{}{}:
			default:
			}
			return
		}
		if ps.delta {
			resp := &v3discoverypb.DeltaDiscoveryResponse{}
			if proto.Unmarshal(b, resp) == nil {
				ts := ps.typeState(resp.GetTypeUrl())
				if !ps.armed() || ps.p.m.deltaResp == nil || ps.p.m.deltaResp(ps, ts, resp) {
					ps.deliveredDeltaLocked(resp)
					b, _ = proto.Marshal(resp)
					ps.out = append(ps.out, b)
				}
			}
		} else {
			resp := &v3discoverypb.DiscoveryResponse{}
			if proto.Unmarshal(b, resp) == nil {
				ts := ps.typeState(resp.GetTypeUrl())
				if !ps.armed() || ps.p.m.sotwResp == nil || ps.p.m.sotwResp(ps, ts, resp) {
					ps.deliveredSotWLocked(resp)
					b, _ = proto.Marshal(resp)
					ps.out = append(ps.out, b)
				}
			}
		}
		ps.mu.Unlock()
		select {
		case ps.ready <- struct{}{}:
		default:
		}
	}
}

func (ps *proxyStream) Recv() ([]byte, error) {
	for {
		ps.mu.Lock()
		if len(ps.out) > 0 {
			b := ps.out[0]
			ps.out = ps.out[1:]
			ps.mu.Unlock()
			return b, nil
		}
		if ps.err != nil {
			err := ps.err
			ps.mu.Unlock()
			return nil, err
		}
		ps.mu.Unlock()
		<-ps.ready
	}
}

// restMiddleware puts m's REST hooks in front of h.
func restMiddleware(m *misbehaviour) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		if m.restReq == nil && m.restResp == nil {
			return h
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			req := &v3discoverypb.DiscoveryRequest{}
			if err := protojson.Unmarshal(body, req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if m.restReq != nil {
				if code := m.restReq(req); code != 0 {
					w.WriteHeader(code)
					return
				}
			}
			body, _ = protojson.Marshal(req)
			r.Body = io.NopCloser(bytes.NewReader(body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusOK || m.restResp == nil {
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
				return
			}
			resp := &v3discoverypb.DiscoveryResponse{}
			if err := protojson.Unmarshal(rec.Body.Bytes(), resp); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			m.restResp(resp)
			out, _ := protojson.Marshal(resp)
			w.Header().Set("Content-Type", "application/json")
			w.Write(out)
		})
	}
}

// nameOf returns the name of a built-in resource (not wrapped), or "".
func nameOf(a *anypb.Any) string {
	m, err := a.UnmarshalNew()
	if err != nil {
		return ""
	}
	if n, ok := m.(interface{ GetName() string }); ok {
		return n.GetName()
	}
	if n, ok := m.(interface{ GetClusterName() string }); ok {
		return n.GetClusterName()
	}
	return ""
}
