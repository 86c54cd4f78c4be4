// SPDX-License-Identifier: Apache-2.0

package xdslog_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoLiteralKeys keeps one vocabulary: every attribute key that library
// code logs with is a constant of this package, never a string literal.
// It reads every non-test file outside cmd/, examples/, interop/ and
// testutil/ and looks at the key positions of slog calls (Debug, Info,
// Warn, Error: after the message; Log: after level and message; With).
func TestNoLiteralKeys(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "cmd", "examples", "interop", "testutil", "otelxds", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "status" || pkg.Name == "http") {
				return true // grpc's status.Error(code, msg), net/http's Error(w, msg, code): not loggers
			}
			start := -1
			switch sel.Sel.Name {
			case "Debug", "Info", "Warn", "Error":
				start = 1
			case "Log":
				start = 3
			case "With":
				start = 0
			}
			if start < 0 {
				return true
			}
			for i := start; i < len(call.Args); i += 2 {
				if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					t.Errorf("%s: log key %s is a literal; use a constant of internal/xdslog", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
