package agent_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The shape the agent's code keeps, read from the code itself: a small
// Agent that wires the pipeline, short files and functions (in agent/ and
// every package below it), and no NATS message built by hand (a message
// is made with nats.NewMsg, so its header is never nil and nothing
// pretends to be a message it is not).
const (
	maxAgentFields  = 12
	maxAgentMethods = 15
	maxFileLines    = 400
	maxFuncLines    = 60
)

// agentSource is the non-test files of the agent, its subpackages and the
// trust packages it admits requests with (../trust: policy, scope),
// parsed, keyed by their path relative to agent/ ("agent.go",
// "../trust/scope/rules.go"). The file and function limits hold for all of
// them; the Agent struct is package agent's alone.
type agentSource struct {
	fset  *token.FileSet
	files map[string]*ast.File
	lines map[string]int
}

func parseAgentSource() agentSource {
	GinkgoHelper()
	src := agentSource{fset: token.NewFileSet(), files: map[string]*ast.File{}, lines: map[string]int{}}
	walk := func(root string) error { return filepath.WalkDir(root, src.add) }
	Expect(walk(".")).To(Succeed())
	Expect(walk(filepath.Join("..", "trust"))).To(Succeed())
	Expect(src.files).To(HaveKey("agent.go"))
	Expect(src.files).To(HaveKey("../trust/scope/rules.go"))
	return src
}

// add parses one file of the walk.
func (src agentSource) add(name string, d fs.DirEntry, err error) error {
	if err != nil {
		return err
	}
	if d.IsDir() {
		if name != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		return nil
	}
	if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
		return nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	f, err := parser.ParseFile(src.fset, name, data, 0)
	if err != nil {
		return err
	}
	name = filepath.ToSlash(name)
	src.files[name] = f
	src.lines[name] = strings.Count(string(data), "\n")
	return nil
}

// agentShape counts the Agent struct's fields and methods, in package
// agent's own files (not its subpackages').
func (s agentSource) agentShape() (fields, methods int) {
	for name, f := range s.files {
		if strings.Contains(name, "/") {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					if ts, ok := sp.(*ast.TypeSpec); ok && ts.Name.Name == "Agent" {
						for _, fl := range ts.Type.(*ast.StructType).Fields.List {
							fields += max(len(fl.Names), 1)
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && strings.TrimPrefix(types(d.Recv.List[0].Type), "*") == "Agent" {
					methods++
				}
			}
		}
	}
	return fields, methods
}

func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + types(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// longFuncs lists the functions over maxFuncLines lines, with their length.
func (s agentSource) longFuncs() []string {
	var out []string
	for name, f := range s.files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := s.fset.Position(fd.End()).Line - s.fset.Position(fd.Pos()).Line + 1
			if n > maxFuncLines {
				out = append(out, fmt.Sprintf("%s:%s %d lines", name, fd.Name.Name, n))
			}
		}
	}
	sort.Strings(out)
	return out
}

// longFiles lists the files over maxFileLines lines.
func (s agentSource) longFiles() []string {
	var out []string
	for name, n := range s.lines {
		if n > maxFileLines {
			out = append(out, fmt.Sprintf("%s %d lines", name, n))
		}
	}
	sort.Strings(out)
	return out
}

// msgLiterals lists every nats.Msg composite literal.
func (s agentSource) msgLiterals() []string {
	var out []string
	for _, f := range s.files {
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if sel, ok := cl.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Msg" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "nats" {
					out = append(out, s.fset.Position(cl.Pos()).String())
				}
			}
			return true
		})
	}
	return out
}

var _ = Describe("The agent's code", func() {
	var src agentSource
	BeforeEach(func() { src = parseAgentSource() })

	It("keeps Agent small: it wires the pipeline, the parts do the work", func() {
		fields, methods := src.agentShape()
		GinkgoWriter.Printf("Agent: %d fields, %d methods\n", fields, methods)
		Expect(fields).To(BeNumerically("<=", maxAgentFields))
		Expect(methods).To(BeNumerically("<=", maxAgentMethods))
	})

	It("keeps every file, in agent/ and below, to 400 lines", func() {
		Expect(src.longFiles()).To(BeEmpty())
	})

	It("keeps every function, in agent/ and below, to 60 lines", func() {
		Expect(src.longFuncs()).To(BeEmpty())
	})

	It("builds no NATS message by hand", func() {
		Expect(src.msgLiterals()).To(BeEmpty())
	})
})
