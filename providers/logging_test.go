package providers_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProvidersLogThroughTheResourceLogger keeps every provider's lines
// about a resource on the redaction path: a function that is given the
// resource's ctx must log through resources.Logger(ctx, ...), which the
// engine arms with the resource's redacting logger, never straight through
// a logger the provider holds (issue 39, finding 10: such lines skipped
// redaction). The command supervisor (runner) logs about processes and
// cgroups, not resources, and is left out.
func TestProvidersLogThroughTheResourceLogger(t *testing.T) {
	levels := map[string]bool{"Debug": true, "Info": true, "Warn": true, "Error": true, "Log": true,
		"DebugContext": true, "InfoContext": true, "WarnContext": true, "ErrorContext": true, "With": true}
	dirs, err := filepath.Glob("*")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || dir == "runner" || dir == "internal" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil || !takesContext(fn) {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok || !levels[sel.Sel.Name] {
						return true
					}
					if held, ok := sel.X.(*ast.SelectorExpr); ok && held.Sel.Name == "log" {
						t.Errorf("%s: %s logs through the provider's own logger; use resources.Logger(ctx, ...)", fset.Position(call.Pos()), fn.Name.Name)
					}
					return true
				})
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d provider files were read: the test is looking in the wrong place", checked)
	}
}

// takesContext reports whether fn has a context.Context parameter.
func takesContext(fn *ast.FuncDecl) bool {
	for _, p := range fn.Type.Params.List {
		if sel, ok := p.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Context" {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "context" {
				return true
			}
		}
	}
	return false
}
