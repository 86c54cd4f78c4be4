// SPDX-License-Identifier: Apache-2.0

package transporttest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/proxyless/xds/testutil"
)

// Log is a RequestLog for servers that keep none of their own (such as
// go-control-plane's, whose callbacks see every request): the harness
// gives it each request with Record. The zero value is not usable; make
// one with NewLog. Safe for concurrent use.
type Log struct {
	mu       sync.Mutex
	requests []*testutil.Request // in arrival order
	consumed int                 // requests[:consumed] were returned or skipped by WaitForRequest
	added    chan struct{}       // closed and replaced by Record
}

var _ RequestLog = (*Log)(nil)

// NewLog returns an empty Log.
func NewLog() *Log { return &Log{added: make(chan struct{})} }

// Record appends r to the log. r must not be modified afterwards.
func (l *Log) Record(r *testutil.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, r)
	close(l.added)
	l.added = make(chan struct{})
}

// Requests returns every request recorded so far, in order; the slice is
// the caller's.
func (l *Log) Requests() []*testutil.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// WaitForRequest implements RequestLog: it consumes requests in order,
// waiting for new ones, until match returns true. match is called with no
// lock held.
func (l *Log) WaitForRequest(ctx context.Context, match func(*testutil.Request) bool) (*testutil.Request, error) {
	for {
		l.mu.Lock()
		if l.consumed < len(l.requests) {
			r := l.requests[l.consumed]
			l.consumed++
			l.mu.Unlock()
			if match(r) {
				return r, nil
			}
			continue
		}
		added := l.added
		l.mu.Unlock()
		select {
		case <-added:
		case <-ctx.Done():
			return nil, fmt.Errorf("transporttest: waiting for a request: %w", ctx.Err())
		}
	}
}

// typeURLOf returns the type URL of r, SotW or delta.
func typeURLOf(r *testutil.Request) string {
	if r.Delta != nil {
		return r.Delta.GetTypeUrl()
	}
	return r.Req.GetTypeUrl()
}

// subscription is what the requests of one stream (or one REST-JSON poll)
// subscribe to for one type.
type subscription struct {
	stream   int64
	wildcard bool            // the wildcard is subscribed
	legacy   bool            // in the legacy form: an empty first request (or poll)
	began    bool            // the first request was the legacy wildcard, whatever came later
	names    map[string]bool // names subscribed, "*" excluded
	explicit bool            // SotW: a request of the stream named something
	first    *testutil.Request
}

func (s *subscription) String() string {
	names := make([]string, 0, len(s.names))
	for n := range s.names {
		names = append(names, n)
	}
	slices.Sort(names)
	return fmt.Sprintf("stream %d: wildcard %t (legacy form %t), names %q", s.stream, s.wildcard, s.legacy, names)
}

// subscriptionsOf returns the subscriptions that reqs make to typeURL, one
// per stream in order of the stream's first request of the type, and one
// per REST-JSON poll (StreamID 0), applying the rules of the xDS protocol,
// "How the client specifies what resources to return": in SotW an empty
// resource_names is the legacy wildcard as long as every request of the
// type on the stream had one, and once a request named something (even
// "*") it means no names; in delta a first request that subscribes and
// unsubscribes nothing is the legacy wildcard, and "*" is subscribed and
// unsubscribed like a name. Whether the type has a legacy wildcard is not
// looked at: legacyMisuse does.
func subscriptionsOf(reqs []*testutil.Request, typeURL string) []*subscription {
	var out []*subscription
	byStream := make(map[int64]*subscription)
	for _, r := range reqs {
		if typeURLOf(r) != typeURL {
			continue
		}
		s := byStream[r.StreamID]
		if s == nil || r.StreamID == 0 {
			s = &subscription{stream: r.StreamID, names: make(map[string]bool), first: r}
			out = append(out, s)
			byStream[r.StreamID] = s
			if r.Delta != nil {
				s.legacy = len(r.Delta.GetResourceNamesSubscribe()) == 0 && len(r.Delta.GetResourceNamesUnsubscribe()) == 0
				s.wildcard = s.legacy
			} else {
				s.legacy = len(r.Req.GetResourceNames()) == 0
			}
			s.began = s.legacy
		}
		if r.Delta != nil {
			for _, n := range r.Delta.GetResourceNamesSubscribe() {
				if n == "*" {
					s.wildcard, s.legacy = true, false
				} else {
					s.names[n] = true
				}
			}
			for _, n := range r.Delta.GetResourceNamesUnsubscribe() {
				if n == "*" {
					s.wildcard, s.legacy = false, false
				} else {
					delete(s.names, n)
				}
			}
			continue
		}
		names := r.Req.GetResourceNames()
		s.explicit = s.explicit || len(names) > 0
		s.legacy = !s.explicit
		s.wildcard = s.legacy || slices.Contains(names, "*")
		clear(s.names)
		for _, n := range names {
			if n != "*" {
				s.names[n] = true
			}
		}
	}
	return out
}

// legacyMisuse returns an error naming the first subscription of reqs to
// k's type that uses the legacy wildcard form when k has none.
func legacyMisuse(reqs []*testutil.Request, k *kind) error {
	if k.legacyWildcard {
		return nil
	}
	for _, s := range subscriptionsOf(reqs, k.typeURL) {
		if s.began {
			return fmt.Errorf("the wildcard of %s was subscribed in the legacy form (an empty first request, on stream %d), which the xDS protocol defines for Listener and Cluster only (\"How the client specifies what resources to return\"): subscribe to \"*\"",
				k.name, s.stream)
		}
	}
	return nil
}

// marker is a point in a RequestLog: what came after it is newer.
type marker struct {
	maxStream int64 // highest StreamID so far
	count     int   // number of requests so far
}

func markOf(reqs []*testutil.Request) marker {
	m := marker{count: len(reqs)}
	for _, r := range reqs {
		m.maxStream = max(m.maxStream, r.StreamID)
	}
	return m
}

// after returns the requests of reqs on streams opened after m, and the
// REST-JSON polls (StreamID 0) that came after m.
func (m marker) after(reqs []*testutil.Request) []*testutil.Request {
	var out []*testutil.Request
	for i, r := range reqs {
		if r.StreamID > m.maxStream || (r.StreamID == 0 && i >= m.count) {
			out = append(out, r)
		}
	}
	return out
}

// checkSubscribed returns an error unless some subscription that reqs make
// to k's type has the wildcard (when wildcard) and every name of names (a
// wildcard covers them: the client may leave names out while it lasts,
// ), or when a subscription uses the legacy wildcard form where k
// has none.
func checkSubscribed(reqs []*testutil.Request, k *kind, wildcard bool, names ...string) error {
	if err := legacyMisuse(reqs, k); err != nil {
		return err
	}
	subs := subscriptionsOf(reqs, k.typeURL)
	for _, s := range subs {
		ok := !wildcard || s.wildcard
		for _, n := range names {
			ok = ok && (s.wildcard || s.names[n])
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("no request subscribed to %s with wildcard %t and names %q; subscriptions: %v", k.name, wildcard, names, subs)
}
