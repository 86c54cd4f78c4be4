// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// bigDocument returns a syntactically broken document of n bytes: if it
// were parsed, the error would be a JSON syntax error, not ErrTooLarge.
func bigDocument(n int) []byte {
	b := bytes.Repeat([]byte(" "), n)
	b[0] = '{'
	return b
}

// TestParse_TooLarge checks that a document above MaxSize is refused
// before it is parsed (issue "bounded failure": a 64 MB file used to
// allocate 320 MB), and that a document of exactly MaxSize is parsed.
func TestParse_TooLarge(t *testing.T) {
	_, err := Parse(bigDocument(MaxSize + 1))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Parse(MaxSize+1 bytes) error = %v, want ErrTooLarge", err)
	}
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "1048577 bytes") || !strings.Contains(err.Error(), "limit of 1048576 bytes") {
		t.Errorf("Parse(MaxSize+1 bytes) error = %q, want a *ParseError naming the size and the limit", err)
	}

	doc := []byte(inlineJSON)
	doc = append(doc, bytes.Repeat([]byte(" "), MaxSize-len(doc))...)
	if _, err := Parse(doc); err != nil {
		t.Fatalf("Parse(MaxSize bytes) error = %v, want nil", err)
	}
}

// TestFromEnv_TooLarge checks that FromEnv refuses a large bootstrap
// before parsing it: a 64 MiB file (by its size, without reading it), an
// endless non-regular file (by reading at most MaxSize+1 bytes), and inline
// JSON; the error names the source.
func TestFromEnv_TooLarge(t *testing.T) {
	bigFile := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(bigFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()

	for _, tc := range []struct {
		name, file, inline string
		maxAlloc           uint64 // bytes FromEnv may allocate
	}{
		{name: "64 MiB file", file: bigFile, maxAlloc: 1 << 20},
		{name: "endless device", file: "/dev/zero", maxAlloc: 8 << 20},
		{name: "inline", inline: string(bigDocument(MaxSize + 1)), maxAlloc: 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.file != "" {
				if _, err := os.Stat(tc.file); err != nil {
					t.Skipf("no %s: %v", tc.file, err)
				}
			}
			t.Setenv(EnvBootstrapFile, tc.file)
			t.Setenv(EnvBootstrapConfig, tc.inline)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := FromEnv()
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("FromEnv error = %v, want ErrTooLarge", err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Source == "" {
				t.Errorf("FromEnv error = %v, want a *ParseError with its Source", err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > tc.maxAlloc {
				t.Errorf("FromEnv allocated %d bytes, want <= %d", got, tc.maxAlloc)
			}
		})
	}
}
