// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeSection returns the text of the README section headed "## title".
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", title)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// firstGoBlock returns the first ```go block of section.
func firstGoBlock(t *testing.T, section string) string {
	t.Helper()
	_, rest, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal("no ```go block")
	}
	code, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("the ```go block does not end")
	}
	return code + "\n"
}

// TestREADME_SnippetsCompile builds the Go code of the README's "Quick
// start" (a whole program) and "Testing your code" (functions, given the
// imports they use), so that the README shows code that compiles.
func TestREADME_SnippetsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	cases := []struct {
		section string
		header  string // prepended to the block; "" for a whole program
	}{
		{section: "Quick start"},
		{section: "Testing your code", header: `package main

import (
	"log"
	"testing"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
)

`},
	}
	for _, tc := range cases {
		t.Run(tc.section, func(t *testing.T) {
			code := tc.header + firstGoBlock(t, readmeSection(t, tc.section))
			// Inside the module, so that its imports resolve; under
			// testdata, so that ./... never sees it.
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			dir, err := os.MkdirTemp("testdata", "readme-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(goTool, "build", "-o", os.DevNull, "./"+filepath.ToSlash(dir))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the README's %q code does not build: %v\n%s\n%s", tc.section, err, out, code)
			}
		})
	}
}
