// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"regexp"
	"regexp/syntax"
)

// This file is the only place in the package that compiles regular
// expressions (docs/style.md: one safe-regex helper).
//
// xDS RegexMatcher patterns are RE2 (google_re2), which Go's regexp
// implements. A matcher's pattern must match the whole input (Envoy's
// "full match" semantics, gRFC A28), so it is compiled anchored. gRPC
// rejects patterns that do not compile on their own: grpc-go compiles the
// bare pattern before the anchored one, so that "a)|(b", which is only
// valid once wrapped in "^(?:…)$", is rejected.

// compileSafeRegex compiles an xDS safe_regex pattern with full-match
// semantics: the returned expression matches a string only if the whole
// string matches pattern.
func compileSafeRegex(pattern string) (*regexp.Regexp, error) {
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return nil, err
	}
	return regexp.Compile("^(?:" + pattern + ")$")
}

// compileRewriteRegex compiles the pattern of a RegexMatchAndSubstitute
// (hash policy regex_rewrite), which replaces every match anywhere in the
// input, so it is not anchored.
func compileRewriteRegex(pattern string) (*regexp.Regexp, error) {
	return regexp.Compile(pattern)
}
