package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/schemacheck"
	"github.com/ccm-fleet/ccm/protocol"
)

// schemaCopy names a schema that carries copies of another's $defs so that
// it validates on its own: its $defs named prefix+X are source's $defs X,
// with their $refs to "#/$defs/Y" spelled "#/$defs/"+prefix+Y.
type schemaCopy struct{ schema, source, prefix string }

var schemaCopies = []schemaCopy{
	{"history-host.schema.json", "result.schema.json", ""},
	{"history-list.schema.json", "result.schema.json", ""},
	{"run-line.schema.json", "result.schema.json", ""},
	{"ensure_request.schema.json", "manifest.schema.json", "manifest_"},
}

// unprefixRefs returns v with each "#/$defs/"+prefix+Y $ref spelled
// "#/$defs/Y" again.
func unprefixRefs(v any, prefix string) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			if s, ok := x.(string); ok && k == "$ref" {
				out[k] = strings.Replace(s, "#/$defs/"+prefix, "#/$defs/", 1)
				continue
			}
			out[k] = unprefixRefs(x, prefix)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = unprefixRefs(x, prefix)
		}
		return out
	}
	return v
}

// readSchema decodes one file of schemas/.
func readSchema(name string) map[string]any {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join("..", "..", "schemas", name))
	Expect(err).NotTo(HaveOccurred())
	var v map[string]any
	Expect(json.Unmarshal(b, &v)).To(Succeed(), name)
	return v
}

// checkOffline validates real documents, and a spoiled copy of the first,
// against each schema with every stock validator found.
func checkOffline(docs map[string][]string) {
	GinkgoHelper()
	pythons := schemacheck.Pythons()
	Expect(pythons).NotTo(BeEmpty(), "no python3 with jsonschema: install python3-jsonschema (make deps)")
	for _, py := range pythons {
		for _, schema := range slices.Sorted(maps.Keys(docs)) {
			path := filepath.Join("..", "..", "schemas", schema)
			var real [][]byte
			for _, d := range docs[schema] {
				real = append(real, []byte(d))
			}
			code, out, err := schemacheck.Validate(py, GinkgoT().TempDir(), path, real...)
			Expect(err).NotTo(HaveOccurred())
			Expect(code).To(Equal(0), "%s -m jsonschema %s on real output:\n%s", py, schema, out)
			spoiled, err := schemacheck.Spoil(real[0])
			Expect(err).NotTo(HaveOccurred())
			code, out, err = schemacheck.Validate(py, GinkgoT().TempDir(), path, spoiled)
			Expect(err).NotTo(HaveOccurred())
			Expect(code).NotTo(Equal(0), "%s -m jsonschema %s accepted an invalid document", py, schema)
			Expect(out).To(ContainSubstring(schemacheck.Canary), "%s -m jsonschema %s refused the invalid document for its canary, not for a failure of its own:\n%s", py, schema, out)
			Expect(out).NotTo(ContainSubstring("Traceback"), out)
		}
	}
}

var _ = Describe("the published JSON schemas, offline", func() {
	It("refer only inside their own file, so no validator needs the network or another file", func() {
		paths, err := filepath.Glob("../../schemas/*.schema.json")
		Expect(err).NotTo(HaveOccurred())
		Expect(paths).NotTo(BeEmpty())
		for _, p := range paths {
			for _, ref := range schemacheck.Refs(readSchema(filepath.Base(p))) {
				Expect(ref).To(HavePrefix("#"), "%s: $ref %q leaves the file", filepath.Base(p), ref)
			}
		}
	})

	It("keep their copies of another schema's definitions identical to it", func() {
		for _, c := range schemaCopies {
			defs := readSchema(c.source)["$defs"].(map[string]any)
			own, ok := readSchema(c.schema)["$defs"].(map[string]any)
			Expect(ok).To(BeTrue(), c.schema)
			copies := 0
			for def, v := range own {
				name, ok := strings.CutPrefix(def, c.prefix)
				if c.prefix != "" && !ok {
					continue // the schema's own definition
				}
				copies++
				Expect(defs).To(HaveKey(name), "%s: $defs/%s is not one of %s's", c.schema, def, c.source)
				Expect(unprefixRefs(v, c.prefix)).To(Equal(defs[name]), "%s: $defs/%s differs from %s's $defs/%s", c.schema, def, c.source, name)
			}
			Expect(copies).To(BeNumerically(">", 0), c.schema)
		}
	})

	It("validate the example manifests with the stock Python validator, and refuse a wrong one", func() {
		examples, err := filepath.Glob("../../examples/*.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(examples).NotTo(BeEmpty())
		var docs []string
		for _, p := range examples {
			b, err := os.ReadFile(p)
			Expect(err).NotTo(HaveOccurred())
			js, err := protocol.YAMLToJSON(b, protocol.Limits{})
			Expect(err).NotTo(HaveOccurred(), p)
			docs = append(docs, string(js))
		}
		checkOffline(map[string][]string{"manifest.schema.json": docs})
	})
})

// offlineDocs gathers, per schema, the real output the schema specs
// validated, for checkOffline.
type offlineDocs map[string][]string

func (o offlineDocs) add(schema, doc string) {
	if strings.TrimSpace(doc) != "" {
		o[schema] = append(o[schema], doc)
	}
}
