// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADME_QuickStartCompiles builds the program of the README's
// "Quick start" section, so that the README shows code that compiles.
func TestREADME_QuickStartCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with the go command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Quick start\n")
	if !ok {
		t.Fatal(`README.md has no "## Quick start" section`)
	}
	const open = "```go\npackage main\n"
	_, rest, ok := strings.Cut(section, open)
	if !ok {
		t.Fatal("the Quick start section has no Go program (a ```go block starting with package main)")
	}
	program, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("the Quick start program does not end")
	}
	// Inside the module, so that its imports resolve; under testdata, so
	// that ./... never sees it.
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "quickstart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"+program+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "build", "-o", os.DevNull, "./"+filepath.ToSlash(dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's quick start does not build: %v\n%s", err, out)
	}
}
