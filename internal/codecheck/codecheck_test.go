package codecheck_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/codecheck"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

// config is what the repository is checked with.
func config() codecheck.Config {
	consts := make([]string, 0, len(catalog.Names()))
	for _, n := range catalog.Names() {
		consts = append(consts, "Type"+strings.ToUpper(n[:1])+n[1:])
	}
	return codecheck.Config{TypeNames: catalog.Names(), TypeConsts: consts, CatalogDir: "resources/catalog", NamesDir: "protocol"}
}

var _ = Describe("The repository's non-test code", func() {
	It("has no nats.Msg literal, no edited or compared error text, no flattened error, no switch, comparison or table of type names and no comment citing a seed document", func() {
		found, err := codecheck.Scan("../..", config())
		Expect(err).NotTo(HaveOccurred())
		var lines []string
		for _, f := range found {
			lines = append(lines, f.String())
		}
		Expect(lines).To(BeEmpty(), "findings:\n%s", strings.Join(lines, "\n"))
	})
})

var _ = Describe("Scan", func() {
	var root string

	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		Expect(os.WriteFile(p, []byte(src), 0o644)).To(Succeed())
	}

	BeforeEach(func() { root = GinkgoT().TempDir() })

	It("reports each shape with its file and line, and leaves tests, the catalog, the names' own lists and clean code alone", func() {
		write("a/bad.go", `package a

import (
	"errors"
	"fmt"
	"strings"

	natsgo "github.com/nats-io/nats.go"

	"example.com/protocol"
)

func f(err error, t string) any {
	_ = strings.TrimPrefix(err.Error(), "yaml: ")
	_ = err.Error() == "boom"
	_ = errors.New(err.Error())
	_ = fmt.Errorf("x: %s", err.Error())
	_ = errors.New(protocol.AsError(err).Message)
	switch t {
	case "exec":
	case "package", "service":
	}
	switch t {
	case protocol.TypeFile, protocol.TypeExec:
	}
	_ = t == "x" || (t == protocol.TypeExec || t == "service") && err != nil
	return &natsgo.Msg{Subject: "s"}
}
`)
		write("a/clean.go", `package a

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

func g(err error, mode string) any {
	_ = strings.TrimSpace(mode)
	_ = fmt.Errorf("x: %w", err)
	_ = errors.Is(err, errors.ErrUnsupported)
	switch mode {
	case "strict", "lax":
	}
	switch scheme := mode; scheme {
	case "file":
	case "https":
	}
	_ = mode == "file" || err != nil || strings.HasPrefix(mode, "exec")
	return nats.NewMsg("s")
}
`)
		write("a/table.go", `package a

import "example.com/protocol"

type row struct{ Type, Help string }

var sourceTypes = []string{protocol.TypeFile, protocol.TypeScaffold}

var rows = []row{
	{Type: "file", Help: "f"},
	{Type: "exec"},
}

var byType = map[string]int{"file": 1, protocol.TypeExec: 2}

func oneOff(r *row, p interface{ Type() interface{ Name() string } }, typeName string) bool {
	return r.Type == "exec" || p.Type().Name() != "apply" || "service" == typeName
}
`)
		write("a/table_clean.go", `package a

import "example.com/protocol"

type row struct{ Type, Help string }

var one = row{Type: protocol.TypeFile, Help: "one type is not a table"}

var schemes = []string{"file", "https"}

var mixed = []string{protocol.TypeFile, "exec-like"}

func g(scheme, mode string, r row) bool {
	return scheme == "file" || mode != "exec" || r.Type == "x" || r.Help == "exec"
}
`)
		write("protocol/ids.go", "package protocol\n\nvar Types = []string{TypeFile, TypeExec}\n\nfunc f(typ string) bool { return typ == \"exec\" }\n")
		write("resources/catalog/list.go", "package catalog\n\nvar shells = []string{\"exec\", \"file\"}\n\nfunc f(typ string) bool { return typ == \"exec\" }\n")
		write("a/bad_test.go", "package a\n\nimport \"strings\"\n\nfunc h(err error) bool { return strings.Contains(err.Error(), \"x\") }\n")
		write("resources/catalog/c.go", "package catalog\n\nfunc k(t string) {\n\tswitch t {\n\tcase \"file\":\n\t}\n}\n")
		write("testdata/t.go", "package t\n\nimport \"strings\"\n\nfunc h(err error) bool { return strings.Contains(err.Error(), \"x\") }\n")

		found, err := codecheck.Scan(root, config())
		Expect(err).NotTo(HaveOccurred())
		var got []string
		for _, f := range found {
			got = append(got, f.String())
		}
		Expect(got).To(ConsistOf(
			"a/bad.go:14: error text edited or compared: strings.TrimPrefix(err.Error())",
			"a/bad.go:15: error text edited or compared: comparison with err.Error()",
			"a/bad.go:16: error flattened to its text: errors.New(... err.Error() ...)",
			"a/bad.go:17: error flattened to its text: fmt.Errorf(... err.Error() ...)",
			"a/bad.go:18: error flattened to its text: errors.New(protocol.AsError(…).Message)",
			"a/bad.go:19: switch on a resource type name: case exec",
			"a/bad.go:23: switch on a resource type name: case TypeFile",
			"a/bad.go:26: switch on a resource type name: x == TypeExec || ...",
			"a/bad.go:27: nats.Msg literal: natsgo.Msg{...}",
			"a/table.go:7: literal listing resource types: TypeFile, TypeScaffold",
			"a/table.go:9: literal listing resource types: file, exec",
			"a/table.go:14: literal listing resource types: file, TypeExec",
			"a/table.go:17: type compared with a resource type name: r.Type == \"exec\"",
			"a/table.go:17: type compared with a resource type name: p.Type(…).Name(…) != \"apply\"",
			"a/table.go:17: type compared with a resource type name: typeName == \"service\"",
			"protocol/ids.go:5: type compared with a resource type name: typ == \"exec\"",
		))
	})

	It("reports a comment citing a seed document by number or path, in test and non-test files, and leaves other seeds alone", func() {
		write("c/doc.go", `// Package c decides things.
package c

// decide follows the decision table of Seed 001.
func decide() {}

/*
keep: the rules of
seeds/002-file.md apply here
*/
func keep() {}

// sign signs with the key's seed; a fuzz seed of 128 bytes; seed 42.
func sign() {}
`)
		write("c/doc_test.go", `package c

import "testing"

// The truth table of seed 000: if and unless.
func TestX(t *testing.T) {
	_ = "seed 001 in a string is not a comment"
	t.Log() // per seed #003
}
`)
		found, err := codecheck.Scan(root, config())
		Expect(err).NotTo(HaveOccurred())
		var got []string
		for _, f := range found {
			got = append(got, f.String())
		}
		Expect(got).To(Equal([]string{
			"c/doc.go:4: comment cites a seed document: Seed 001",
			"c/doc.go:9: comment cites a seed document: seeds/",
			"c/doc_test.go:5: comment cites a seed document: seed 000",
			"c/doc_test.go:8: comment cites a seed document: seed #003",
		}))
	})

	It("fails on a file that does not parse rather than skipping it", func() {
		write("b/broken.go", "package b\n\nfunc {\n")
		_, err := codecheck.Scan(root, config())
		Expect(err).To(MatchError(ContainSubstring("broken.go")))
	})
})
