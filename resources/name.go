// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"slices"
	"strings"
)

// xdstpScheme is the scheme of new-style resource names (gRFC A47, xRFC TP1).
const xdstpScheme = "xdstp"

// Name is a parsed new-style resource name of the form
//
//	xdstp://[authority]/type/id[?key=value&...][#directive]
//
// (gRFC A47, xRFC TP1 "URI-based xDS resource names"). The fields hold the
// text exactly as it appears in the name: percent-encoding is neither
// decoded by ParseName nor added by String, so a name sent by a management
// server keeps its bytes (only the order of its context parameters may
// change, see String). A processing directive (the part after '#', which
// gRPC does not use) is kept verbatim in an unexported field so that String
// reproduces it.
//
// The zero value is not a valid name. A Name returned by ParseName must not
// be modified if it is shared.
type Name struct {
	// Scheme is always "xdstp".
	Scheme string
	// Authority selects the management servers of the name. It may
	// be empty ("xdstp:///type/id"), which selects the authority whose key is
	// "" in the bootstrap file.
	Authority string
	// Type is the resource type segment, for example
	// "envoy.config.listener.v3.Listener". Never empty in a parsed name.
	Type string
	// ID is the rest of the path after the type segment. It may contain
	// '/'. Never empty in a parsed name.
	ID string
	// ContextParams maps each context parameter key to its value; nil when
	// the name has no query. A key that appears more than once keeps its
	// last value (gRFC A47). A parameter without '=' has the value "".
	ContextParams map[string]string

	directive    string // text after '#', without the '#'
	hasDirective bool   // whether the name had a '#', even with nothing after it
}

// ParseName parses a new-style resource name (see Name). It returns an
// error if s does not start with "xdstp:" ("not an xdstp name"), does not
// continue with "//", or lacks a non-empty type or id path segment.
// Old-style names (anything else, including other "scheme://" URIs) are
// opaque strings and have no Name.
//
// ParseName is safe for concurrent use.
func ParseName(s string) (*Name, error) {
	rest, ok := strings.CutPrefix(s, xdstpScheme+":")
	if !ok {
		return nil, fmt.Errorf("resource name %q: not an xdstp name", s)
	}
	rest, ok = strings.CutPrefix(rest, "//")
	if !ok {
		return nil, fmt.Errorf("resource name %q: xdstp name without \"//\" after the scheme", s)
	}
	n := &Name{Scheme: xdstpScheme}
	rest, n.directive, n.hasDirective = strings.Cut(rest, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	authority, path, ok := strings.Cut(rest, "/")
	if !ok {
		return nil, fmt.Errorf("resource name %q: xdstp name without a path", s)
	}
	n.Authority = authority
	n.Type, n.ID, _ = strings.Cut(path, "/")
	if n.Type == "" {
		return nil, fmt.Errorf("resource name %q: xdstp name with an empty type segment", s)
	}
	if n.ID == "" {
		return nil, fmt.Errorf("resource name %q: xdstp name with an empty id", s)
	}
	if hasQuery {
		for kv := range strings.SplitSeq(query, "&") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			if n.ContextParams == nil {
				n.ContextParams = make(map[string]string)
			}
			// Duplicate keys: the last value wins (gRFC A47, R-5.2).
			n.ContextParams[k] = v
		}
	}
	return n, nil
}

// String returns the canonical form of n: "xdstp://", the
// authority, "/type/id", then the context parameters sorted by key as
// "?k1=v1&k2=v2" (omitted when there are none), then "#directive" if the
// parsed name had one. For a Name built by hand, the delimiters that a field
// cannot contain ('/', '?', '#' in the authority and type; '?', '#' in the
// id; '&', '=', '#' in keys and '&', '#' in values) are percent-encoded so
// that the result parses back into the same fields; nothing else is
// escaped. Two names that differ only in the order of their context
// parameters have the same String.
func (n *Name) String() string {
	var b strings.Builder
	b.Grow(len(xdstpScheme) + 4 + len(n.Authority) + len(n.Type) + len(n.ID) + 16*len(n.ContextParams) + len(n.directive))
	b.WriteString(xdstpScheme)
	b.WriteString("://")
	writeEscaped(&b, n.Authority, "/?#")
	b.WriteByte('/')
	writeEscaped(&b, n.Type, "/?#")
	b.WriteByte('/')
	writeEscaped(&b, n.ID, "?#")
	if len(n.ContextParams) > 0 {
		keys := make([]string, 0, len(n.ContextParams))
		for k := range n.ContextParams {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i == 0 {
				b.WriteByte('?')
			} else {
				b.WriteByte('&')
			}
			writeEscaped(&b, k, "&=#")
			b.WriteByte('=')
			writeEscaped(&b, n.ContextParams[k], "&#")
		}
	}
	if n.hasDirective {
		b.WriteByte('#')
		b.WriteString(n.directive)
	}
	return b.String()
}

// writeEscaped writes s to b with every byte of special percent-encoded.
func writeEscaped(b *strings.Builder, s, special string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(special, c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
			continue
		}
		b.WriteByte(c)
	}
}

// CanonicalName returns the canonical form of resource name s (R-5.2,
// for a valid xdstp name, ParseName(s).String(); for any other
// name (old-style, or an xdstp name that ParseName rejects) s itself,
// unchanged. A name without a query is already canonical, so the common
// case returns s without allocating. Safe for concurrent use.
func CanonicalName(s string) string {
	if !strings.HasPrefix(s, xdstpScheme+":") || !strings.Contains(s, "?") {
		return s
	}
	n, err := ParseName(s)
	if err != nil {
		return s
	}
	return n.String()
}
