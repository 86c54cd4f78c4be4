// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"go/scanner"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// snippet is one ```go block of README.md.
type snippet struct {
	key  string // "Section title #n": the nth ```go block of the section
	code string
}

// readmeSnippets returns every ```go block of README.md, in order.
func readmeSnippets(t *testing.T) []snippet {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []snippet
	section, n := "", 0
	lines := strings.Split(string(readme), "\n")
	for i := 0; i < len(lines); i++ {
		switch line := lines[i]; {
		case strings.HasPrefix(line, "## "):
			section, n = strings.TrimPrefix(line, "## "), 0
		case line == "```go":
			n++
			end := slices.Index(lines[i+1:], "```")
			if end < 0 {
				t.Fatalf("README.md:%d: the ```go block does not end", i+1)
			}
			out = append(out, snippet{key: fmt.Sprintf("%s #%d", section, n), code: strings.Join(lines[i+1:i+1+end], "\n") + "\n"})
			i += end + 1
		}
	}
	return out
}

// wrapping says how a fragment of Go (a block that is not a whole
// program) becomes one: statements go into the body of a function whose
// parameters are params, top-level declarations (a block that starts with
// func or type) into a file of package main. The file imports what the
// code and params use, by package name, from readmeImports; a fragment
// that shows its own import block gets exactly those imports for its
// code. Each variable a statement block declares with := at its top level
// is then used (_ = v), as the program that continues the fragment would.
type wrapping struct {
	params string
	// paragraphs puts each paragraph (lines between blank lines) of
	// statements in a block of its own: the fragment shows alternatives
	// that each declare c, err :=.
	paragraphs bool
	// module is the directory, from the repository's root, of the module
	// that builds the code: "" the root module; "otelxds" for code that
	// uses OpenTelemetry, which only that nested module requires.
	module string
}

// readmeWrappings are the wrappings of the README's fragments, by
// snippet key; a fragment without one gets the zero wrapping. Whole
// programs need none.
var readmeWrappings = map[string]wrapping{
	"Quick start #2":             {params: "c *client.Client"},
	"With gRPC #1":               {params: "cfg *bootstrap.Config"},
	"With net/http #1":           {params: "cfg *bootstrap.Config"},
	"Security (mTLS) #1":         {params: "c *client.Client"},
	"The xDS-enabled server #1":  {params: "c *client.Client"},
	"Other transports #1":        {params: "cfg *bootstrap.Config", paragraphs: true},
	"Operating it #1":            {params: "cfg *bootstrap.Config"},
	"Operating it #2":            {params: "c *client.Client, lis net.Listener"},
	"Operating it #3":            {params: "cfg *bootstrap.Config, meterProvider metric.MeterProvider", module: "otelxds"},
	"Operating it #4":            {params: "cfg *bootstrap.Config"},
	"In your own module #1":      {module: "otelxds"},
	"Observing the data path #1": {params: "c *client.Client, mp metric.MeterProvider", module: "otelxds"},
}

// readmeImports are the packages a fragment may use without showing its
// imports, by the name it uses.
var readmeImports = map[string]string{
	"context":       "context",
	"fmt":           "fmt",
	"log":           "log",
	"net":           "net",
	"os":            "os",
	"http":          "net/http",
	"slog":          "log/slog",
	"testing":       "testing",
	"time":          "time",
	"grpc":          "google.golang.org/grpc",
	"insecure":      "google.golang.org/grpc/credentials/insecure",
	"health":        "google.golang.org/grpc/health",
	"healthpb":      "google.golang.org/grpc/health/grpc_health_v1",
	"testgrpc":      "google.golang.org/grpc/interop/grpc_testing",
	"bootstrap":     "github.com/proxyless/xds/bootstrap",
	"client":        "github.com/proxyless/xds/client",
	"csds":          "github.com/proxyless/xds/csds",
	"depmgr":        "github.com/proxyless/xds/depmgr",
	"mgmtserver":    "github.com/proxyless/xds/mgmtserver",
	"xdsbuild":      "github.com/proxyless/xds/mgmtserver/xdsbuild",
	"resources":     "github.com/proxyless/xds/resources",
	"server":        "github.com/proxyless/xds/server",
	"testutil":      "github.com/proxyless/xds/testutil",
	"watcher":       "github.com/proxyless/xds/watcher",
	"xdscreds":      "github.com/proxyless/xds/xdscreds",
	"xdsresolver":   "github.com/proxyless/xds/xdsresolver",
	"xdshttp":       "github.com/proxyless/xds/xdshttp",
	"file":          "github.com/proxyless/xds/transport/file",
	"grpctransport": "github.com/proxyless/xds/transport/grpctransport",
	"googledefault": "github.com/proxyless/xds/transport/grpctransport/googledefault",
	"mixed":         "github.com/proxyless/xds/transport/mixed",
	"pertype":       "github.com/proxyless/xds/transport/pertype",
	"rest":          "github.com/proxyless/xds/transport/rest",
	"otelxds":       "github.com/proxyless/xds/otelxds",
	"metric":        "go.opentelemetry.io/otel/metric",
	"sdkmetric":     "go.opentelemetry.io/otel/sdk/metric",
	"opentelemetry": "google.golang.org/grpc/stats/opentelemetry",
}

// usedPackages returns the names of readmeImports that code uses as
// qualifiers (name.X), outside comments and strings.
func usedPackages(code string) map[string]bool {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", -1, len(code)), []byte(code), nil, 0)
	used := map[string]bool{}
	prev, prevLit := token.ILLEGAL, ""
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return used
		}
		if tok == token.PERIOD && prev == token.IDENT && readmeImports[prevLit] != "" {
			used[prevLit] = true
		}
		prev, prevLit = tok, lit
	}
}

// declaredVar matches an unindented statement that declares variables
// with :=.
var declaredVar = regexp.MustCompile(`(?m)^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*:=`)

// useDeclared returns "_ = v" lines for the variables that the
// unindented := statements of stmts declare.
func useDeclared(stmts string) string {
	var b strings.Builder
	seen := map[string]bool{"_": true}
	for _, m := range declaredVar.FindAllStringSubmatch(stmts, -1) {
		for _, v := range strings.Split(m[1], ",") {
			if v = strings.TrimSpace(v); !seen[v] {
				seen[v] = true
				fmt.Fprintf(&b, "_ = %s\n", v)
			}
		}
	}
	return b.String()
}

// program returns the README block s as a whole program of package main.
func program(s snippet, w wrapping) (string, error) {
	code := s.code
	if strings.HasPrefix(code, "package ") {
		return code, nil
	}
	// A fragment's own import block: exactly its imports for its code.
	imports := map[string]string{} // name → `name "path"` spec
	used := usedPackages(w.params)
	if rest, ok := strings.CutPrefix(code, "import (\n"); ok {
		specs, body, ok := strings.Cut(rest, "\n)\n")
		if !ok {
			return "", fmt.Errorf("its import block does not end")
		}
		for _, spec := range strings.Split(specs, "\n") {
			if spec = strings.TrimSpace(spec); spec != "" {
				path := strings.Trim(spec[strings.Index(spec, `"`):], `"`)
				imports[spec] = spec
				delete(used, filepath.Base(path)) // shown: not added again
			}
		}
		code = strings.TrimLeft(body, "\n")
	} else {
		maps.Copy(used, usedPackages(code))
	}
	for name := range used {
		imports[name] = fmt.Sprintf("%s %q", name, readmeImports[name])
	}
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, spec := range slices.Sorted(maps.Values(imports)) {
		fmt.Fprintf(&b, "\t%s\n", spec)
	}
	b.WriteString(")\n\n")
	if strings.HasPrefix(code, "func ") || strings.HasPrefix(code, "type ") {
		b.WriteString(code)
		if !strings.Contains(code, "\nfunc main() ") && !strings.HasPrefix(code, "func main() ") {
			b.WriteString("\nfunc main() {}\n")
		}
		return b.String(), nil
	}
	fmt.Fprintf(&b, "func main() {}\n\nfunc snippet(%s) {\n", w.params)
	paragraphs := []string{code}
	if w.paragraphs {
		paragraphs = strings.Split(strings.TrimSpace(code), "\n\n")
	}
	for _, p := range paragraphs {
		if w.paragraphs {
			b.WriteString("{\n")
		}
		p = strings.TrimRight(p, "\n") + "\n"
		b.WriteString(p)
		b.WriteString(useDeclared(p))
		if w.paragraphs {
			b.WriteString("}\n")
		}
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// TestREADME_SnippetsCompile builds every ```go block of README.md: a
// whole program as it is, a fragment as program makes it a program (see
// wrapping), so that the README shows code that compiles. The programs
// of each module are built by one go build, with -overlay: they appear
// under the module's testdata directory (which ./... never sees) without
// being written into the repository.
func TestREADME_SnippetsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	snippets := readmeSnippets(t)
	if len(snippets) < 10 {
		t.Fatalf("README.md has %d ```go blocks; this test expects at least 10", len(snippets))
	}
	keys := map[string]bool{}
	type built struct {
		snippet
		dir  string // of its package, relative to its module
		code string
	}
	byModule := map[string][]built{}
	for i, s := range snippets {
		keys[s.key] = true
		w := readmeWrappings[s.key]
		code, err := program(s, w)
		if err != nil {
			t.Errorf("README %q: %v", s.key, err)
			continue
		}
		dir := fmt.Sprintf("testdata/readme/snippet%02d", i+1)
		byModule[w.module] = append(byModule[w.module], built{s, dir, code})
	}
	for key := range readmeWrappings {
		if !keys[key] {
			t.Errorf("readmeWrappings has %q, which README.md has not: update the table", key)
		}
	}
	for module, programs := range byModule {
		moduleDir := filepath.Join(root, module)
		tmp := t.TempDir()
		overlay := map[string]string{}
		args := []string{"build", "-o", os.DevNull}
		if len(programs) > 1 {
			args = args[:1] // several main packages are built and discarded
		}
		for _, p := range programs {
			file := filepath.Join(tmp, filepath.Base(p.dir)+".go")
			if err := os.WriteFile(file, []byte(p.code), 0o644); err != nil {
				t.Fatal(err)
			}
			overlay[filepath.Join(moduleDir, p.dir, "main.go")] = file
			args = append(args, "./"+p.dir)
		}
		js, err := json.Marshal(map[string]any{"Replace": overlay})
		if err != nil {
			t.Fatal(err)
		}
		overlayFile := filepath.Join(tmp, "overlay.json")
		if err := os.WriteFile(overlayFile, js, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(goTool, append([]string{args[0], "-overlay", overlayFile}, args[1:]...)...)
		cmd.Dir = moduleDir
		out, err := cmd.CombinedOutput()
		if err == nil {
			continue
		}
		failed := 0
		for _, p := range programs {
			if strings.Contains(string(out), p.dir+"/") || strings.Contains(string(out), p.dir+"\n") {
				failed++
				t.Errorf("README %q does not build (as %s/main.go; readmeWrappings says how a fragment is wrapped):\n%s", p.key, p.dir, numbered(p.code))
			}
		}
		if failed == 0 {
			t.Errorf("go build in %s: %v", moduleDir, err)
		}
		t.Logf("go build in %s: %v\n%s", moduleDir, err, out)
	}
}

// numbered returns code with line numbers, as the compiler counts them.
func numbered(code string) string {
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(code, "\n"), "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, line)
	}
	return b.String()
}
