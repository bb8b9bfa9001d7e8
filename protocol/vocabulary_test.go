package protocol_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// isProseToken reports whether lit is an outcome token spelled with
// spaces, as prose spells it ("would change" for would_change).
func isProseToken(lit string) bool {
	for _, o := range protocol.EventOutcomes {
		if p := strings.ReplaceAll(o, "_", " "); p != o && lit == p {
			return true
		}
	}
	return false
}

// isForeignSpelling reports whether lit spells an outcome in a way of no
// medium of ours ("would-change").
func isForeignSpelling(lit string) bool {
	return strings.Contains(strings.ToLower(lit), "would-change")
}

// tokenUses returns the string literals of f used where an outcome is a
// token: compared (==, !=, a switch case, Gomega's Equal), listed in a
// []string (label values) or a map key. Prose (format arguments, legends,
// messages) may spell an outcome with spaces.
func tokenUses(f *ast.File) []*ast.BasicLit {
	var out []*ast.BasicLit
	add := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			out = append(out, lit)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			for _, e := range n.List {
				add(e)
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				add(n.X)
				add(n.Y)
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "Equal" && len(n.Args) == 1 {
				add(n.Args[0])
			}
		case *ast.CompositeLit:
			if at, ok := n.Type.(*ast.ArrayType); ok {
				if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "string" {
					for _, e := range n.Elts {
						add(e)
					}
				}
			}
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if _, isMap := n.Type.(*ast.MapType); isMap {
						add(kv.Key)
					}
				}
			}
		}
		return true
	})
	return out
}

// pendingVocabulary are files known to still spell an outcome otherwise,
// each with the change it needs; the spec fails once one is fixed, so the
// entry goes with it.
var pendingVocabulary = map[string]string{
	"agent/metrics.go":       `label values from protocol.EventOutcomes instead of a literal list with "would change"`,
	"agent/manifest_test.go": `expect protocol.EventWouldChange from Outcome()`,
}

// The map key is a token use too: a label or JSON key.
var _ = Describe("the outcome vocabulary", func() {
	It("spells would_change one way per medium across the code, schemas and templates", func() {
		root, err := filepath.Abs("..")
		Expect(err).NotTo(HaveOccurred())
		var found []string
		pending := map[string]bool{}
		fset := token.NewFileSet()
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if d.IsDir() {
				if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case rel == "protocol/vocabulary_test.go":
				// this file names the spellings it looks for
			case strings.HasSuffix(path, ".go"):
				f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
				if err != nil {
					return err
				}
				var bad []*ast.BasicLit
				for _, lit := range tokenUses(f) {
					if s, err := strconv.Unquote(lit.Value); err == nil && isProseToken(s) {
						bad = append(bad, lit)
					}
				}
				ast.Inspect(f, func(n ast.Node) bool {
					if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, err := strconv.Unquote(lit.Value); err == nil && isForeignSpelling(s) {
							bad = append(bad, lit)
						}
					}
					return true
				})
				for _, lit := range bad {
					if _, ok := pendingVocabulary[rel]; ok {
						pending[rel] = true
					} else {
						found = append(found, fset.Position(lit.Pos()).String()+": "+lit.Value)
					}
				}
			case strings.HasPrefix(rel, "schemas/") && strings.HasSuffix(path, ".json"),
				strings.HasPrefix(rel, "ui/") && strings.HasSuffix(path, ".html"):
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				for _, o := range protocol.EventOutcomes {
					if p := strings.ReplaceAll(o, "_", " "); p != o && strings.Contains(string(b), strconv.Quote(p)) {
						found = append(found, rel+": "+strconv.Quote(p))
					}
				}
				if isForeignSpelling(string(b)) {
					found = append(found, rel+": a foreign spelling of would_change")
				}
			}
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeEmpty(), "an outcome spelled other than its token (would_change) or prose within a sentence")
		for f, fix := range pendingVocabulary {
			Expect(pending).To(HaveKey(f), "%s is fixed (%s): remove it from pendingVocabulary", f, fix)
		}
	})
})
