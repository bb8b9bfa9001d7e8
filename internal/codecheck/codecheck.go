package codecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Rule names what a finding breaks.
type Rule string

// The rules Scan enforces.
const (
	// RuleMsgLiteral: a nats.Msg composite literal; build messages with
	// nats.NewMsg and set the fields.
	RuleMsgLiteral Rule = "nats.Msg literal"
	// RuleErrorText: a strings or bytes function applied to err.Error(),
	// or err.Error() compared with ==/!=; classify with errors.Is/As.
	RuleErrorText Rule = "error text edited or compared"
	// RuleFlatten: errors.New or fmt.Errorf given err.Error(), or
	// errors.New given an error's Message; wrap with %w (or
	// protocol.Plain) so the cause stays classifiable.
	RuleFlatten Rule = "error flattened to its text"
	// RuleTypeSwitch: a switch whose cases list two or more resource type
	// names, outside the resource catalog.
	RuleTypeSwitch Rule = "switch on a resource type name"
	// RuleSeedCite: a comment, in test code too, that cites a seed
	// document by number or by a path into its seeds directory; say
	// the rule itself.
	RuleSeedCite Rule = "comment cites a seed document"
	// RuleTypeCompare: a resource's type (x.Type, typ, typeName,
	// p.Type.Name()) compared with a string literal naming a resource
	// type, outside the resource catalog: what the type does belongs in
	// its catalog entry.
	RuleTypeCompare Rule = "type compared with a resource type name"
	// RuleTypeList: a composite literal listing two or more resource
	// types (as elements, as map keys, or as the Type field of its
	// element literals), outside the resource catalog: a per-type table
	// belongs in the catalog's entries.
	RuleTypeList Rule = "literal listing resource types"
)

// Finding is one place that breaks a rule.
type Finding struct {
	// Path is the file, slash separated, relative to the scanned root.
	Path string
	Line int
	Rule Rule
	// Code is the offending expression or statement head as written.
	Code string
}

// String renders f as `path:line: rule: code`.
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", f.Path, f.Line, f.Rule, f.Code)
}

// Config says what Scan reads and what it knows.
type Config struct {
	// TypeNames are the resource type names a switch must not list.
	TypeNames []string
	// TypeConsts are the names of constants that hold type names
	// (TypeFile, protocol.TypeExec): a switch must not list them either.
	TypeConsts []string
	// CatalogDir is the directory (relative to the root, slash separated)
	// allowed to switch on type names.
	CatalogDir string
	// NamesDir is the directory (relative to the root, slash separated)
	// of the package that declares the type name constants (protocol):
	// it may list them, its list of the names and its state document per
	// name being the wire protocol the catalog itself builds on (and
	// cannot be read from there). It is held to every other rule.
	NamesDir string
}

const natsPath = "github.com/nats-io/nats.go"

// skipDirs are directories Scan never enters.
var skipDirs = []string{".git", "testdata", "vendor", "node_modules"}

// Scan parses every .go file under root and returns the findings, in path
// and line order: of test files, only their comments are checked
// (RuleSeedCite).
func Scan(root string, cfg Config) ([]Finding, error) {
	var out []Finding
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (slices.Contains(skipDirs, d.Name()) || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		found, err := scanFile(p, filepath.ToSlash(rel), cfg)
		if err != nil {
			return err
		}
		out = append(out, found...)
		return nil
	})
	return out, err
}

// scanFile returns the findings of one file, in line order; rel is its
// reported path. A test file's code is not checked, its comments are.
func scanFile(path, rel string, cfg Config) ([]Finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("codecheck: %w", err)
	}
	found := seedCitations(fset, rel, f.Comments)
	if strings.HasSuffix(rel, "_test.go") {
		return found, nil
	}
	c := &checker{fset: fset, rel: rel, cfg: cfg,
		natsName:    importName(f, natsPath, "nats"),
		stringsName: importName(f, "strings", "strings"),
		bytesName:   importName(f, "bytes", "bytes"),
		errorsName:  importName(f, "errors", "errors"),
		fmtName:     importName(f, "fmt", "fmt"),
		inCatalog:   within(rel, cfg.CatalogDir),
		inNames:     within(rel, cfg.NamesDir),
	}
	ast.Inspect(f, c.visit)
	found = append(found, c.found...)
	slices.SortStableFunc(found, func(a, b Finding) int { return a.Line - b.Line })
	return found, nil
}

// within reports whether the file rel is in the directory dir (or below
// it); never when dir is "".
func within(rel, dir string) bool {
	return dir != "" && strings.HasPrefix(rel, dir+"/")
}

// importName is the name file f uses for the package at path ("" when f
// does not import it).
func importName(f *ast.File, path, def string) string {
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || p != path {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return def
	}
	return ""
}

type checker struct {
	fset                                                  *token.FileSet
	rel                                                   string
	cfg                                                   Config
	natsName, stringsName, bytesName, errorsName, fmtName string
	inCatalog, inNames                                    bool
	found                                                 []Finding
}

func (c *checker) add(n ast.Node, rule Rule, code string) {
	c.found = append(c.found, Finding{Path: c.rel, Line: c.fset.Position(n.Pos()).Line, Rule: rule, Code: code})
}

func (c *checker) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.CompositeLit:
		if isSelector(n.Type, c.natsName, "Msg") {
			c.add(n, RuleMsgLiteral, c.natsName+".Msg{...}")
		}
		if !c.inCatalog && !c.inNames {
			if names := c.listedTypes(n); len(names) >= 2 {
				c.add(n, RuleTypeList, strings.Join(names, ", "))
			}
		}
	case *ast.CallExpr:
		c.call(n)
	case *ast.BinaryExpr:
		if (n.Op == token.EQL || n.Op == token.NEQ) && (isErrorCall(n.X) || isErrorCall(n.Y)) {
			c.add(n, RuleErrorText, "comparison with "+render(errorCallOf(n.X, n.Y)))
		}
		if (n.Op == token.EQL || n.Op == token.NEQ) && !c.inCatalog {
			if operand, name, ok := c.typeComparison(n); ok {
				c.add(n, RuleTypeCompare, exprString(operand)+" "+n.Op.String()+" "+strconv.Quote(name))
			}
		}
		if n.Op == token.LOR && !c.inCatalog {
			if name, ok := c.typeChain(n); ok {
				c.add(n, RuleTypeSwitch, "x == "+name+" || ...")
			}
			// The chain's inner || are part of it: not walked again.
			ast.Inspect(n.Y, c.visit)
			return c.skipChain(n.X)
		}
	case *ast.SwitchStmt:
		if !c.inCatalog {
			if name, ok := c.typeCase(n); ok {
				c.add(n, RuleTypeSwitch, "case "+name)
			}
		}
	}
	return true
}

// call checks a call for edited or flattened error text.
func (c *checker) call(n *ast.CallExpr) {
	sel, ok := n.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return
	}
	if pkg.Name == c.errorsName && c.errorsName != "" && sel.Sel.Name == "New" && len(n.Args) == 1 {
		if m, ok := n.Args[0].(*ast.SelectorExpr); ok && m.Sel.Name == "Message" {
			c.add(n, RuleFlatten, "errors.New("+exprString(m)+")")
			return
		}
	}
	arg := firstErrorArg(n.Args)
	if arg == nil {
		return
	}
	switch {
	case pkg.Name == c.stringsName && c.stringsName != "", pkg.Name == c.bytesName && c.bytesName != "":
		c.add(n, RuleErrorText, pkg.Name+"."+sel.Sel.Name+"("+render(arg)+")")
	case pkg.Name == c.errorsName && c.errorsName != "" && sel.Sel.Name == "New",
		pkg.Name == c.fmtName && c.fmtName != "" && sel.Sel.Name == "Errorf":
		c.add(n, RuleFlatten, pkg.Name+"."+sel.Sel.Name+"(... "+render(arg)+" ...)")
	}
}

// typeChain reports the first resource type name an || chain compares
// with, when it compares one operand with two or more (t == "exec" || t ==
// "service"): a switch on the type's name written as a condition.
func (c *checker) typeChain(n *ast.BinaryExpr) (string, bool) {
	names := map[string][]string{}
	var first string
	for _, e := range orTerms(n) {
		cmp, ok := e.(*ast.BinaryExpr)
		if !ok || cmp.Op != token.EQL {
			continue
		}
		operand, value := cmp.X, cmp.Y
		name, ok := c.typeName(value)
		if !ok {
			operand, value = cmp.Y, cmp.X
			if name, ok = c.typeName(value); !ok {
				continue
			}
		}
		// The operand as written: comparisons of different operands
		// (scheme == "file" || kind == "exec") are no switch.
		key := types.ExprString(operand)
		if !slices.Contains(names[key], name) {
			names[key] = append(names[key], name)
		}
		if len(names[key]) == 2 && first == "" {
			first = names[key][0]
		}
	}
	return first, first != ""
}

// orTerms lists the operands of an || chain, parentheses removed.
func orTerms(e ast.Expr) []ast.Expr {
	if p, ok := e.(*ast.ParenExpr); ok {
		return orTerms(p.X)
	}
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.LOR {
		return append(orTerms(b.X), orTerms(b.Y)...)
	}
	return []ast.Expr{e}
}

// skipChain walks the left side of an || chain without taking its inner
// || for chains of their own; it returns false (the caller walked it).
func (c *checker) skipChain(e ast.Expr) bool {
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.LOR {
		ast.Inspect(b.Y, c.visit)
		return c.skipChain(b.X)
	}
	ast.Inspect(e, c.visit)
	return false
}

// typeCase reports the first resource type name a switch lists as a case
// value, when it lists two or more: a switch on the type's name. One name
// alone is not taken for one ("file" is also a URL scheme).
func (c *checker) typeCase(s *ast.SwitchStmt) (string, bool) {
	var names []string
	for _, st := range s.Body.List {
		cc, ok := st.(*ast.CaseClause)
		if !ok {
			continue
		}
		for _, e := range cc.List {
			if name, ok := c.typeName(e); ok && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if len(names) < 2 {
		return "", false
	}
	return names[0], true
}

// typeName reports the type name a case value is: a string literal of
// one, or a constant named in TypeConsts (bare or package-qualified).
func (c *checker) typeName(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		v, err := strconv.Unquote(e.Value)
		return v, err == nil && slices.Contains(c.cfg.TypeNames, v)
	case *ast.Ident:
		return e.Name, slices.Contains(c.cfg.TypeConsts, e.Name)
	case *ast.SelectorExpr:
		return e.Sel.Name, slices.Contains(c.cfg.TypeConsts, e.Sel.Name)
	}
	return "", false
}

// typeComparison reports the operand and the type name of a comparison of
// a type-valued expression (see isTypeExpr) with a string literal naming a
// resource type: r.Ensure.Type == "exec". A literal alone is not enough
// (u.Scheme != "file" compares a URL's scheme).
func (c *checker) typeComparison(n *ast.BinaryExpr) (ast.Expr, string, bool) {
	for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
		lit, ok := ast.Unparen(pair[1]).(*ast.BasicLit)
		if !ok {
			continue
		}
		if name, ok := c.typeName(lit); ok && isTypeExpr(pair[0]) {
			return pair[0], name, true
		}
	}
	return nil, "", false
}

// isTypeExpr reports whether e reads as a resource's type: an identifier
// or field whose name is typ or ends in "type" or "typename" (Type, typ,
// typeName, ResourceType), a call of such a method, or x.Type.Name().
func isTypeExpr(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return typeWord(e.Name)
	case *ast.SelectorExpr:
		return typeWord(e.Sel.Name)
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		if !ok || len(e.Args) != 0 {
			return false
		}
		return typeWord(sel.Sel.Name) || sel.Sel.Name == "Name" && isTypeExpr(sel.X)
	}
	return false
}

// typeWord reports whether an identifier names a type: typ, or a name
// ending in "type" or "typename", in any case.
func typeWord(name string) bool {
	l := strings.ToLower(name)
	return l == "typ" || strings.HasSuffix(l, "type") || strings.HasSuffix(l, "typename")
}

// listedTypes returns the distinct resource type names a composite literal
// lists: elements that are type names (TypeFile, "exec"), keys that are
// (a map per type), and the Type field of element literals ({Type:
// "file", ...}: a table per type).
func (c *checker) listedTypes(n *ast.CompositeLit) []string {
	var names []string
	add := func(e ast.Expr) {
		if name, ok := c.typeName(ast.Unparen(e)); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, elt := range n.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			add(kv.Key)
			continue
		}
		add(elt)
		if u, ok := elt.(*ast.UnaryExpr); ok && u.Op == token.AND {
			elt = u.X
		}
		inner, ok := elt.(*ast.CompositeLit)
		if !ok {
			continue
		}
		for _, f := range inner.Elts {
			if kv, ok := f.(*ast.KeyValueExpr); ok {
				if key, ok := kv.Key.(*ast.Ident); ok && typeWord(key.Name) {
					add(kv.Value)
				}
			}
		}
	}
	return names
}

// firstErrorArg returns the first argument that is a call x.Error().
func firstErrorArg(args []ast.Expr) ast.Expr {
	for _, a := range args {
		if isErrorCall(a) {
			return a
		}
	}
	return nil
}

// isErrorCall reports whether e is a call of a method Error with no
// arguments.
func isErrorCall(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Error"
}

func errorCallOf(a, b ast.Expr) ast.Expr {
	if isErrorCall(a) {
		return a
	}
	return b
}

// isSelector reports whether e is pkg.name (pkg non-empty).
func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || pkg == "" || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// render writes a short form of an x.Error() call: `err.Error()`.
func render(e ast.Expr) string {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return "?"
	}
	sel := call.Fun.(*ast.SelectorExpr)
	return exprString(sel.X) + ".Error()"
}

// exprString renders identifiers, selectors and calls; other shapes as `…`.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		return exprString(e.Fun) + "(…)"
	case *ast.ParenExpr:
		return "(" + exprString(e.X) + ")"
	case *ast.IndexExpr:
		return exprString(e.X) + "[…]"
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	default:
		return "…"
	}
}
