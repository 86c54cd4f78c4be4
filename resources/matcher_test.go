// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"regexp"
	"testing"
)

func TestStringMatcher_Match(t *testing.T) {
	re := regexp.MustCompile("^(?:a+b)$")
	tests := []struct {
		m    StringMatcher
		s    string
		want bool
	}{
		{StringMatcher{Kind: StringMatchExact, Value: "abc"}, "abc", true},
		{StringMatcher{Kind: StringMatchExact, Value: "abc"}, "ABC", false},
		{StringMatcher{Kind: StringMatchExact, Value: "abc", IgnoreCase: true}, "ABC", true},
		{StringMatcher{Kind: StringMatchExact}, "", true},
		{StringMatcher{Kind: StringMatchPrefix, Value: "ab"}, "abc", true},
		{StringMatcher{Kind: StringMatchPrefix, Value: "AB", IgnoreCase: true}, "abc", true},
		{StringMatcher{Kind: StringMatchPrefix, Value: "abcd", IgnoreCase: true}, "abc", false},
		{StringMatcher{Kind: StringMatchSuffix, Value: "bc"}, "abc", true},
		{StringMatcher{Kind: StringMatchSuffix, Value: "BC"}, "abc", false},
		{StringMatcher{Kind: StringMatchSuffix, Value: "BC", IgnoreCase: true}, "abc", true},
		{StringMatcher{Kind: StringMatchContains, Value: "b"}, "abc", true},
		{StringMatcher{Kind: StringMatchContains, Value: "B", IgnoreCase: true}, "abc", true},
		// ignore_case folds ASCII only (as gRPC C++): the Kelvin sign
		// U+212A, which Unicode folds to 'k', is not 'k'.
		{StringMatcher{Kind: StringMatchExact, Value: "k", IgnoreCase: true}, "\u212a", false},
		{StringMatcher{Kind: StringMatchPrefix, Value: "k", IgnoreCase: true}, "\u212ax", false},
		{StringMatcher{Kind: StringMatchSuffix, Value: "xK", IgnoreCase: true}, "x\u212a", false},
		{StringMatcher{Kind: StringMatchContains, Value: "ak", IgnoreCase: true}, "xa\u212ax", false},
		{StringMatcher{Kind: StringMatchContains, Value: "x"}, "abc", false},
		{StringMatcher{Kind: StringMatchSafeRegex, Value: "a+b", Regex: re}, "aab", true},
		{StringMatcher{Kind: StringMatchSafeRegex, Value: "a+b", Regex: re}, "aabc", false},
		{StringMatcher{}, "", false},
	}
	for _, tc := range tests {
		if got := tc.m.Match(tc.s); got != tc.want {
			t.Errorf("%+v.Match(%q) = %v, want %v", tc.m, tc.s, got, tc.want)
		}
	}
}
