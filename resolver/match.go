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
	headers       []resources.HeaderMatcher
	fraction      uint32 // parts per million; 1,000,000 when unset
}

func compileMatch(m *resources.RouteMatch) routeMatch {
	rm := routeMatch{kind: m.PathKind, caseSensitive: m.CaseSensitive, regex: m.Regex, headers: m.Headers, fraction: 1_000_000}
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
// (gRFC A28): its outgoing metadata, read once and only if a header
// matcher needs it, without "-bin" headers, and with content-type
// "application/grpc".
type rpcHeaders struct {
	md   metadata.MD
	read bool
	ctx  context.Context
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
	if !h.read {
		h.read = true
		if h.ctx != nil {
			h.md, _ = metadata.FromOutgoingContext(h.ctx)
		}
	}
	vs := h.md[name]
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
		if !matchHeader(&m.headers[i], h) {
			return false
		}
	}
	return m.fraction >= 1_000_000 || rand.Uint32N(1_000_000) < m.fraction
}

// matchHeader applies one header matcher (gRFC A28, R-17.3): a matcher on
// an absent header fails (even inverted), except present_match.
func matchHeader(hm *resources.HeaderMatcher, h *rpcHeaders) bool {
	v, ok := h.get(hm.Name)
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
