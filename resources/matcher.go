// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/proxyless/xds/internal/asciifold"

	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// StringMatcher matches a string, such as a certificate's subject
// alternative name (envoy.type.matcher.v3.StringMatcher).
type StringMatcher struct {
	// Kind says how Value is matched.
	Kind StringMatchKind
	// Value is the string to match, or the RE2 pattern of
	// StringMatchSafeRegex. Non-empty for prefix, suffix and contains.
	Value string
	// Regex is Value compiled with full-match semantics, for
	// StringMatchSafeRegex only; nil otherwise. Safe for concurrent use.
	Regex *regexp.Regexp
	// IgnoreCase is ignore_case; it applies to every kind but
	// StringMatchSafeRegex.
	IgnoreCase bool
}

// StringMatchKind is the kind of a StringMatcher. The zero value is not a
// valid kind; Decode never returns it.
type StringMatchKind uint8

// The string match kinds.
const (
	StringMatchExact StringMatchKind = iota + 1
	StringMatchPrefix
	StringMatchSuffix
	StringMatchContains
	StringMatchSafeRegex
)

// String returns the kind's proto field name, for example "exact".
func (k StringMatchKind) String() string {
	switch k {
	case StringMatchExact:
		return "exact"
	case StringMatchPrefix:
		return "prefix"
	case StringMatchSuffix:
		return "suffix"
	case StringMatchContains:
		return "contains"
	case StringMatchSafeRegex:
		return "safe_regex"
	default:
		return fmt.Sprintf("StringMatchKind(%d)", uint8(k))
	}
}

// Match reports whether s matches m, with the semantics of
// envoy.type.matcher.v3.StringMatcher: exact, prefix, suffix and contains
// compare ignoring ASCII case only when IgnoreCase is set, as gRPC C++
// does (not Unicode folding: the Kelvin sign does not match "k"; package
// internal/asciifold); safe_regex must match the whole of
// s. The zero StringMatcher matches nothing. Match is safe for concurrent
// use.
func (m StringMatcher) Match(s string) bool {
	switch m.Kind {
	case StringMatchExact:
		if m.IgnoreCase {
			return asciifold.Equal(s, m.Value)
		}
		return s == m.Value
	case StringMatchPrefix:
		if m.IgnoreCase {
			return asciifold.HasPrefix(s, m.Value)
		}
		return strings.HasPrefix(s, m.Value)
	case StringMatchSuffix:
		if m.IgnoreCase {
			return asciifold.HasSuffix(s, m.Value)
		}
		return strings.HasSuffix(s, m.Value)
	case StringMatchContains:
		if m.IgnoreCase {
			return asciifold.Contains(s, m.Value)
		}
		return strings.Contains(s, m.Value)
	case StringMatchSafeRegex:
		return m.Regex != nil && m.Regex.MatchString(s)
	}
	return false
}

// stringMatcherFromProto converts a StringMatcher as gRPC does: prefix,
// suffix and contains must be non-empty, an exact match may be empty, a
// regex must compile, and custom matchers are not supported. Error fields
// are relative to the StringMatcher.
func stringMatcherFromProto(sm *v3matcherpb.StringMatcher) (StringMatcher, error) {
	if sm == nil {
		return StringMatcher{}, invalid("", "missing")
	}
	out := StringMatcher{IgnoreCase: sm.GetIgnoreCase()}
	switch p := sm.GetMatchPattern().(type) {
	case *v3matcherpb.StringMatcher_Exact:
		out.Kind, out.Value = StringMatchExact, p.Exact
	case *v3matcherpb.StringMatcher_Prefix:
		if p.Prefix == "" {
			return StringMatcher{}, invalid("prefix", "empty")
		}
		out.Kind, out.Value = StringMatchPrefix, p.Prefix
	case *v3matcherpb.StringMatcher_Suffix:
		if p.Suffix == "" {
			return StringMatcher{}, invalid("suffix", "empty")
		}
		out.Kind, out.Value = StringMatchSuffix, p.Suffix
	case *v3matcherpb.StringMatcher_Contains:
		if p.Contains == "" {
			return StringMatcher{}, invalid("contains", "empty")
		}
		out.Kind, out.Value = StringMatchContains, p.Contains
	case *v3matcherpb.StringMatcher_SafeRegex:
		re, err := safeRegexFromProto(p.SafeRegex)
		if err != nil {
			return StringMatcher{}, withFieldPrefix("safe_regex", err)
		}
		out.Kind, out.Value, out.Regex, out.IgnoreCase = StringMatchSafeRegex, p.SafeRegex.GetRegex(), re, false
	case nil:
		return StringMatcher{}, invalid("", "no match pattern")
	default:
		return StringMatcher{}, invalid("", "unsupported match pattern %s", oneofName(sm.ProtoReflect(), "match_pattern"))
	}
	return out, nil
}

// safeRegexFromProto compiles a RegexMatcher with full-match semantics;
// error fields are relative to it.
func safeRegexFromProto(rm *v3matcherpb.RegexMatcher) (*regexp.Regexp, error) {
	re, err := compileSafeRegex(rm.GetRegex())
	if err != nil {
		return nil, invalid("regex", "invalid RE2 pattern %q: %w", rm.GetRegex(), err)
	}
	return re, nil
}
