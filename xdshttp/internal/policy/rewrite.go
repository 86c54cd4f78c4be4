// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"github.com/proxyless/xds/resources"
)

// RewritePath returns the path an attempt of a request of path (escaped,
// without its query) sends, after the route action a's rewrite, as
// Envoy's RouteAction says (docs/http.md "Rewriting"):
//
//   - prefix_rewrite: the matched prefix is replaced (m's prefix for a
//     prefix match, case-insensitively matched or not; the whole path for
//     a path or safe_regex match);
//   - regex_rewrite: every match of its pattern in the path is replaced by
//     its substitution (Envoy's \N capture groups, resources converts
//     them to Go's syntax).
//
// It returns path unchanged when a rewrites nothing; the query string is
// the caller's to keep.
func RewritePath(m *resources.RouteMatch, a *resources.RouteAction, path string) string {
	switch {
	case a.PrefixRewrite != "":
		if m.PathKind == resources.PathKindPrefix && len(m.Prefix) <= len(path) {
			return a.PrefixRewrite + path[len(m.Prefix):]
		}
		return a.PrefixRewrite
	case a.RegexRewrite != nil:
		return a.RegexRewrite.Replace(path)
	}
	return path
}

// RewriteHost returns the Host an attempt sends: a's host_rewrite_literal
// when set, else host.
func RewriteHost(a *resources.RouteAction, host string) string {
	if a.HostRewriteLiteral != "" {
		return a.HostRewriteLiteral
	}
	return host
}

// rewritesPath reports whether a changes the path.
func rewritesPath(a *resources.RouteAction) bool {
	return a.PrefixRewrite != "" || a.RegexRewrite != nil
}

// Rewrites reports whether a changes the path or the Host of a request.
func Rewrites(a *resources.RouteAction) bool {
	return rewritesPath(a) || a.HostRewriteLiteral != ""
}
