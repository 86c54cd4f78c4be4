// SPDX-License-Identifier: Apache-2.0

package asciifold

import "testing"

func TestFold(t *testing.T) {
	const kelvin = "\u212a" // folds to 'k' in Unicode, not in ASCII
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"equal, other case", Equal("/Pkg.Svc/Method", "/pkg.svc/METHOD"), true},
		{"equal, other length", Equal("ab", "abc"), false},
		{"equal, Kelvin sign", Equal(kelvin, "k"), false},
		{"equal, long s", Equal("\u017f", "s"), false},
		{"equal, same non-ASCII", Equal("é"+kelvin, "é"+kelvin), true},
		{"equal, punctuation is not folded", Equal("@", "`"), false},
		{"prefix", HasPrefix("/Pkg.Svc/M", "/pkg."), true},
		{"prefix, Kelvin", HasPrefix(kelvin+"x", "k"), false},
		{"prefix, too long", HasPrefix("/a", "/ab"), false},
		{"suffix", HasSuffix("API.EXAMPLE.com", ".example.COM"), true},
		{"suffix, Kelvin", HasSuffix("x"+kelvin, "K"), false},
		{"contains", Contains("xxABCxx", "abc"), true},
		{"contains, empty", Contains("", ""), true},
		{"contains, absent", Contains("xxABxCx", "abc"), false},
		{"contains, Kelvin", Contains("a"+kelvin+"b", "akb"), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if got := ToLower("/Pkg." + kelvin + "Svc"); got != "/pkg."+kelvin+"svc" {
		t.Errorf("ToLower = %q; want only ASCII letters lowered", got)
	}
	if s := "already/lower"; ToLower(s) != s {
		t.Errorf("ToLower(%q) changed it", s)
	}
}

func BenchmarkEqual(b *testing.B) {
	for range b.N {
		Equal("/grpc.testing.TestService/UnaryCall", "/GRPC.testing.testservice/unarycall")
	}
}
