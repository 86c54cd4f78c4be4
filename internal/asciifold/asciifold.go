// SPDX-License-Identifier: Apache-2.0

// Package asciifold compares strings ignoring ASCII case only, as gRPC
// C++ and Envoy do for xDS matchers (case_sensitive false, ignore_case,
// virtual host domains): 'A'–'Z' equal 'a'–'z', and every other byte,
// each byte of a multi-byte UTF-8 sequence included, equals only itself.
// Unlike strings.EqualFold, the Kelvin sign (U+212A) does not equal 'k',
// nor 'ſ' (U+017F) 's'. The functions allocate nothing.
package asciifold

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Equal reports whether a and b are equal ignoring ASCII case.
func Equal(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i] != b[i] && lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

// HasPrefix reports whether s begins with prefix, ignoring ASCII case.
func HasPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && Equal(s[:len(prefix)], prefix)
}

// HasSuffix reports whether s ends with suffix, ignoring ASCII case.
func HasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && Equal(s[len(s)-len(suffix):], suffix)
}

// Contains reports whether substr is within s, ignoring ASCII case.
func Contains(s, substr string) bool {
	for i := 0; i+len(substr) <= len(s); i++ {
		if Equal(s[i:i+len(substr)], substr) {
			return true
		}
	}
	return false
}

// ToLower returns s with 'A'–'Z' replaced by 'a'–'z'; s itself when it
// has none.
func ToLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lower(b[j])
			}
			return string(b)
		}
	}
	return s
}
