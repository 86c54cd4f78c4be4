// SPDX-License-Identifier: Apache-2.0

// Package routing is the matching gRPC does per RPC on xDS routes (gRFC
// A28): virtual hosts by authority, routes by path and headers. The
// client's data path (package xdsresolver), the dependency manager and the
// xDS-enabled server share it, so that a route matches the same RPCs on
// either end.
package routing

import (
	"context"
	"math/rand/v2"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/internal/asciifold"
	"github.com/proxyless/xds/resources"
)

// Match is a RouteMatch compiled for matching one RPC (gRFC A28).
type Match struct {
	kind          resources.PathKind
	value         string // prefix or path; lowercased when !caseSensitive
	caseSensitive bool
	regex         *regexp.Regexp
	headers       []headerMatch
	query         []resources.QueryParameterMatcher // HTTP only
	fraction      uint32                            // parts per million; 1,000,000 when unset
}

// headerMatch is a header matcher with the index of its header name
// (Headers.byIndex) and its own index (Headers.cached) in the
// configuration: equal matchers of several routes share an index, and
// are evaluated once per RPC.
type headerMatch struct {
	idx int // header name
	mid int // matcher
	hm  *resources.HeaderMatcher
}

// Index numbers the header names and the distinct header matchers of a
// configuration. It is not safe for concurrent use; the Matches compiled
// with it are immutable.
type Index struct {
	names    map[string]int
	matchers map[matcherKey]int
}

// matcherKey identifies a header matcher: two matchers with the same key
// give the same result on any RPC (the pattern of a regex is Value).
type matcherKey struct {
	name, value                 string
	kind                        resources.HeaderMatchKind
	ignoreCase, present, invert bool
	start, end                  int64
}

func NewIndex() *Index {
	return &Index{names: make(map[string]int), matchers: make(map[matcherKey]int)}
}

func (x *Index) add(hm *resources.HeaderMatcher) headerMatch {
	i, ok := x.names[hm.Name]
	if !ok {
		i = len(x.names)
		x.names[hm.Name] = i
	}
	k := matcherKey{hm.Name, hm.Value, hm.Kind, hm.IgnoreCase, hm.Present, hm.Invert, hm.RangeStart, hm.RangeEnd}
	mid, ok := x.matchers[k]
	if !ok {
		mid = len(x.matchers)
		x.matchers[k] = mid
	}
	return headerMatch{idx: i, mid: mid, hm: hm}
}

// Compile compiles m; x numbers its header names and matchers (nil: a
// fresh numbering): the matches of one configuration share an Index, so
// that equal matchers are evaluated once per RPC.
func Compile(m *resources.RouteMatch, x *Index) Match {
	if x == nil {
		x = NewIndex()
	}
	rm := Match{kind: m.PathKind, caseSensitive: m.CaseSensitive, regex: m.Regex, fraction: 1_000_000}
	for i := range m.Headers {
		rm.headers = append(rm.headers, x.add(&m.Headers[i]))
	}
	switch m.PathKind {
	case resources.PathKindPrefix:
		rm.value = m.Prefix
	case resources.PathKindPath:
		rm.value = m.Path
	}
	if !rm.caseSensitive {
		rm.value = asciifold.ToLower(rm.value)
	}
	if m.FractionPerMillion != nil {
		rm.fraction = *m.FractionPerMillion
	}
	rm.query = m.QueryParameters
	return rm
}

// Headers are the headers of one request as route matching sees them.
// For a gRPC RPC (gRFC A28): its metadata, without "-bin" headers, and
// with content-type "application/grpc"; for another request, what its
// Source says. Each header a route matcher names is read at most once per
// request, by its index in the configuration's header names (Index), and
// only if a matcher needs it. A Headers is one request's, used by one
// goroutine.
type Headers struct {
	// Ctx is the context of a client's RPC, whose outgoing metadata are
	// its headers; MD, when not nil, are the headers instead (a server's
	// RPC: its incoming metadata); Source, when not nil, gives the
	// headers of a request that is not an RPC (an HTTP request), and the
	// other two are unused.
	Ctx    context.Context
	MD     metadata.MD
	Source HeaderSource
	// RawQuery is the query string of an HTTP request (without "?"),
	// which the query parameter matchers of HTTP routes read;
	// unused for an RPC.
	RawQuery string
	query    url.Values      // RawQuery parsed, once a matcher needs it
	cache    [16]headerValue // by header index; more for larger indexes
	more     []headerValue
	// The results of the first 256 matchers (by matcher index), once
	// evaluated: bit i of known says whether bit i of result is set.
	known, result [4]uint64
}

// cached returns the result of matcher mid, and whether it is known.
func (h *Headers) cached(mid int) (result, known bool) {
	if mid >= 256 {
		return false, false
	}
	w, bit := mid/64, uint64(1)<<(mid%64)
	return h.result[w]&bit != 0, h.known[w]&bit != 0
}

// remember records the result of matcher mid.
func (h *Headers) remember(mid int, r bool) {
	if mid >= 256 {
		return
	}
	w, bit := mid/64, uint64(1)<<(mid%64)
	h.known[w] |= bit
	if r {
		h.result[w] |= bit
	}
}

type headerValue struct {
	v     string
	state uint8 // 0 unread, 1 absent, 2 present
}

// byIndex returns the header of index i (named name).
func (h *Headers) byIndex(i int, name string) (string, bool) {
	var hv *headerValue
	if i < len(h.cache) {
		hv = &h.cache[i]
	} else {
		if h.more == nil {
			h.more = make([]headerValue, 64)
		}
		if i-len(h.cache) >= len(h.more) {
			return h.Get(name)
		}
		hv = &h.more[i-len(h.cache)]
	}
	if hv.state == 0 {
		v, ok := h.Get(name)
		hv.v, hv.state = v, 1
		if ok {
			hv.state = 2
		}
	}
	return hv.v, hv.state == 2
}

// HeaderSource gives the headers of a request that is not a gRPC RPC.
type HeaderSource interface {
	// Header returns the values of header name (lowercase) joined with
	// ",", and whether the request has it.
	Header(name string) (string, bool)
}

// Get returns the values of header name joined with ",", and whether the
// request has it. For an RPC, metadata.ValueFromOutgoingContext copies
// the values (one allocation per header present), the least gRPC Go's
// public API allows; byIndex reads each header once per request.
func (h *Headers) Get(name string) (string, bool) {
	if h.Source != nil {
		return h.Source.Header(name)
	}
	if strings.HasSuffix(name, "-bin") {
		return "", false
	}
	if name == "content-type" {
		return "application/grpc", true
	}
	var vs []string
	switch {
	case h.MD != nil:
		vs = h.MD.Get(name)
	case h.Ctx != nil:
		vs = metadata.ValueFromOutgoingContext(h.Ctx, name)
	}
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}

// MatchPath reports whether the full method name path ("/pkg.Svc/Method")
// matches. case_sensitive false ignores ASCII case only, as gRPC C++ does.
func (m *Match) MatchPath(path string) bool {
	switch m.kind {
	case resources.PathKindPrefix:
		if m.caseSensitive {
			return strings.HasPrefix(path, m.value)
		}
		return asciifold.HasPrefix(path, m.value)
	case resources.PathKindPath:
		if m.caseSensitive {
			return path == m.value
		}
		return asciifold.Equal(path, m.value)
	case resources.PathKindSafeRegex:
		return m.regex != nil && m.regex.MatchString(path)
	}
	return false
}

// Matches reports whether an RPC of path and headers h matches: path,
// then every header matcher, then the runtime fraction.
func (m *Match) Matches(path string, h *Headers) bool {
	if !m.MatchPath(path) {
		return false
	}
	for i := range m.headers {
		hm := &m.headers[i]
		r, known := h.cached(hm.mid)
		if !known {
			v, ok := h.byIndex(hm.idx, hm.hm.Name)
			r = MatchHeaderValue(hm.hm, v, ok)
			h.remember(hm.mid, r)
		}
		if !r {
			return false
		}
	}
	for i := range m.query {
		if !h.matchQuery(&m.query[i]) {
			return false
		}
	}
	return m.fraction >= 1_000_000 || rand.Uint32N(1_000_000) < m.fraction
}

// matchQuery applies a query parameter matcher as Envoy does: to the
// parameter's first value; without a string matcher, presence alone
// . The query is parsed on the first use.
func (h *Headers) matchQuery(q *resources.QueryParameterMatcher) bool {
	if h.query == nil {
		h.query, _ = url.ParseQuery(h.RawQuery) // a malformed pair is left out, as Envoy skips it
		if h.query == nil {
			h.query = url.Values{}
		}
	}
	vs, ok := h.query[q.Name]
	if !ok {
		return false
	}
	if q.Value.Kind == 0 {
		return true
	}
	return q.Value.Match(vs[0])
}

// MatchHeader applies one header matcher to the RPC of headers h.
func MatchHeader(hm *resources.HeaderMatcher, h *Headers) bool {
	v, ok := h.Get(hm.Name)
	return MatchHeaderValue(hm, v, ok)
}

// MatchHeaderValue applies one header matcher (gRFC A28, R-17.3) to the
// header's value v (ok: present): a matcher on an absent header fails
// (even inverted), except present_match. ignore_case ignores ASCII case
// only, as gRPC C++ does.
func MatchHeaderValue(hm *resources.HeaderMatcher, v string, ok bool) bool {
	if hm.Kind == resources.HeaderMatchPresent {
		return (ok == hm.Present) != hm.Invert
	}
	if !ok {
		return false
	}
	var r bool
	switch hm.Kind {
	case resources.HeaderMatchExact:
		if hm.IgnoreCase {
			r = asciifold.Equal(v, hm.Value)
		} else {
			r = v == hm.Value
		}
	case resources.HeaderMatchPrefix:
		if hm.IgnoreCase {
			r = asciifold.HasPrefix(v, hm.Value)
		} else {
			r = strings.HasPrefix(v, hm.Value)
		}
	case resources.HeaderMatchSuffix:
		if hm.IgnoreCase {
			r = asciifold.HasSuffix(v, hm.Value)
		} else {
			r = strings.HasSuffix(v, hm.Value)
		}
	case resources.HeaderMatchContains:
		if hm.IgnoreCase {
			r = asciifold.Contains(v, hm.Value)
		} else {
			r = strings.Contains(v, hm.Value)
		}
	case resources.HeaderMatchSafeRegex:
		r = hm.Regex != nil && hm.Regex.MatchString(v)
	case resources.HeaderMatchRange:
		n, err := strconv.ParseInt(v, 10, 64)
		r = err == nil && hm.RangeStart <= n && n < hm.RangeEnd
	}
	return r != hm.Invert
}

// OrderMatchers reorders the header matchers of each of ms, rarest first:
// a matcher that few routes share is the likeliest to tell them apart, so
// an RPC that does not match a route is told so after fewer evaluations.
// All of a route's matchers must match, and matching has no side effect,
// so the order does not change which route an RPC matches. ms are the
// matches of one configuration (one Index).
func OrderMatchers(ms []*Match) {
	uses := map[int]int{}
	for _, m := range ms {
		for _, hm := range m.headers {
			uses[hm.mid]++
		}
	}
	for _, m := range ms {
		slices.SortStableFunc(m.headers, func(a, b headerMatch) int { return uses[a.mid] - uses[b.mid] })
	}
}
