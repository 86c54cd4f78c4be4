// SPDX-License-Identifier: Apache-2.0

package resolver

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/resources"
)

// routeMatch is a RouteMatch compiled for matching one RPC (gRFC A28).
type routeMatch struct {
	kind          resources.PathKind
	value         string // prefix or path; lowercased when !caseSensitive
	caseSensitive bool
	regex         *regexp.Regexp
	headers       []headerMatch
	fraction      uint32 // parts per million; 1,000,000 when unset
}

// headerMatch is a header matcher with the index of its header name in
// the configuration (rpcHeaders.byIndex).
type headerMatch struct {
	idx int
	hm  *resources.HeaderMatcher
}

// headerIndex numbers header names for rpcHeaders.byIndex.
type headerIndex map[string]int

func (x headerIndex) of(name string) int {
	i, ok := x[name]
	if !ok {
		i = len(x)
		x[name] = i
	}
	return i
}

// compileMatch compiles m; names numbers its header names (nil: a fresh
// numbering).
func compileMatch(m *resources.RouteMatch, names headerIndex) routeMatch {
	if names == nil {
		names = headerIndex{}
	}
	rm := routeMatch{kind: m.PathKind, caseSensitive: m.CaseSensitive, regex: m.Regex, fraction: 1_000_000}
	for i := range m.Headers {
		rm.headers = append(rm.headers, headerMatch{idx: names.of(m.Headers[i].Name), hm: &m.Headers[i]})
	}
	switch m.PathKind {
	case resources.PathKindPrefix:
		rm.value = m.Prefix
	case resources.PathKindPath:
		rm.value = m.Path
	}
	if !rm.caseSensitive {
		rm.value = strings.ToLower(rm.value)
	}
	if m.FractionPerMillion != nil {
		rm.fraction = *m.FractionPerMillion
	}
	return rm
}

// rpcHeaders are the headers of one RPC as route matching sees them
// (gRFC A28): its outgoing metadata, without "-bin" headers, and with
// content-type "application/grpc". Each header a route matcher names is
// read at most once per RPC, by its index in the configuration's header
// names (routerConfig.headerNames), and only if a matcher needs it.
type rpcHeaders struct {
	ctx   context.Context
	cache [16]headerValue // by header index; more for larger indexes
	more  []headerValue
}

type headerValue struct {
	v     string
	state uint8 // 0 unread, 1 absent, 2 present
}

// byIndex returns the header of index i (named name).
func (h *rpcHeaders) byIndex(i int, name string) (string, bool) {
	var hv *headerValue
	if i < len(h.cache) {
		hv = &h.cache[i]
	} else {
		if h.more == nil {
			h.more = make([]headerValue, 64)
		}
		if i-len(h.cache) >= len(h.more) {
			return h.get(name)
		}
		hv = &h.more[i-len(h.cache)]
	}
	if hv.state == 0 {
		v, ok := h.get(name)
		hv.v, hv.state = v, 1
		if ok {
			hv.state = 2
		}
	}
	return hv.v, hv.state == 2
}

// get returns the values of header name joined with ",", and whether the
// RPC has it.
func (h *rpcHeaders) get(name string) (string, bool) {
	if strings.HasSuffix(name, "-bin") {
		return "", false
	}
	if name == "content-type" {
		return "application/grpc", true
	}
	if h.ctx == nil {
		return "", false
	}
	vs := metadata.ValueFromOutgoingContext(h.ctx, name)
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}

// matchPath reports whether the full method name path ("/pkg.Svc/Method")
// matches.
func (m *routeMatch) matchPath(path string) bool {
	switch m.kind {
	case resources.PathKindPrefix:
		if m.caseSensitive {
			return strings.HasPrefix(path, m.value)
		}
		return len(path) >= len(m.value) && strings.EqualFold(path[:len(m.value)], m.value)
	case resources.PathKindPath:
		if m.caseSensitive {
			return path == m.value
		}
		return strings.EqualFold(path, m.value)
	case resources.PathKindSafeRegex:
		return m.regex != nil && m.regex.MatchString(path)
	}
	return false
}

// matches reports whether an RPC of path and headers h matches: path,
// then every header matcher, then the runtime fraction.
func (m *routeMatch) matches(path string, h *rpcHeaders) bool {
	if !m.matchPath(path) {
		return false
	}
	for i := range m.headers {
		hm := &m.headers[i]
		v, ok := h.byIndex(hm.idx, hm.hm.Name)
		if !matchHeaderValue(hm.hm, v, ok) {
			return false
		}
	}
	return m.fraction >= 1_000_000 || rand.Uint32N(1_000_000) < m.fraction
}

// matchHeader applies one header matcher to the RPC of headers h.
func matchHeader(hm *resources.HeaderMatcher, h *rpcHeaders) bool {
	v, ok := h.get(hm.Name)
	return matchHeaderValue(hm, v, ok)
}

// matchHeaderValue applies one header matcher (gRFC A28, R-17.3) to the
// header's value v (ok: present): a matcher on an absent header fails
// (even inverted), except present_match.
func matchHeaderValue(hm *resources.HeaderMatcher, v string, ok bool) bool {
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
			r = strings.EqualFold(v, hm.Value)
		} else {
			r = v == hm.Value
		}
	case resources.HeaderMatchPrefix:
		if hm.IgnoreCase {
			r = len(v) >= len(hm.Value) && strings.EqualFold(v[:len(hm.Value)], hm.Value)
		} else {
			r = strings.HasPrefix(v, hm.Value)
		}
	case resources.HeaderMatchSuffix:
		if hm.IgnoreCase {
			r = len(v) >= len(hm.Value) && strings.EqualFold(v[len(v)-len(hm.Value):], hm.Value)
		} else {
			r = strings.HasSuffix(v, hm.Value)
		}
	case resources.HeaderMatchContains:
		if hm.IgnoreCase {
			r = strings.Contains(strings.ToLower(v), strings.ToLower(hm.Value))
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
