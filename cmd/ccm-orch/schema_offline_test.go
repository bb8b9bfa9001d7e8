package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// offlineCanary is the key planted in each deliberately invalid document; a
// stock validator's refusal must name it.
const offlineCanary = "ccm_offline_canary_7f3a"

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

// refsOf lists every $ref value in a decoded schema.
func refsOf(v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if s, ok := x.(string); ok && k == "$ref" {
				out = append(out, s)
				continue
			}
			out = append(out, refsOf(x)...)
		}
	case []any:
		for _, x := range t {
			out = append(out, refsOf(x)...)
		}
	}
	return out
}

// stockPythons lists the Python interpreters that have the jsonschema
// package (Debian's python3-jsonschema installs it for /usr/bin/python3),
// each once.
func stockPythons() []string {
	var out []string
	seen := map[string]bool{}
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		real, err := filepath.EvalSymlinks(c)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		if exec.Command(c, "-c", "import jsonschema").Run() == nil {
			out = append(out, c)
		}
	}
	return out
}

// stockValidate runs `python -m jsonschema -i DOC... SCHEMA` the way an
// operator would, with any HTTP(S) fetch pointed at a closed port so that a
// schema needing the network fails here too. It returns the exit status and
// the combined output.
func stockValidate(python, schema string, docs ...string) (int, string) {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	args := []string{"-m", "jsonschema"}
	for i, d := range docs {
		f := filepath.Join(dir, fmt.Sprintf("doc-%d.json", i))
		Expect(os.WriteFile(f, []byte(d), 0o600)).To(Succeed())
		args = append(args, "-i", f)
	}
	args = append(args, filepath.Join("..", "..", "schemas", schema))
	cmd := exec.Command(python, args...)
	cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore::DeprecationWarning",
		"http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "no_proxy=", "NO_PROXY=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		Expect(err).To(BeAssignableToTypeOf(ee), "%s: %s", python, out)
		return err.(*exec.ExitError).ExitCode(), string(out)
	}
	return 0, string(out)
}

// spoil returns doc with the canary planted where no schema allows it: a
// key of the top object, or an element of the top array.
func spoil(doc string) string {
	GinkgoHelper()
	var v any
	Expect(json.Unmarshal([]byte(doc), &v)).To(Succeed())
	switch t := v.(type) {
	case map[string]any:
		t[offlineCanary] = true
	case []any:
		v = append(t, map[string]any{offlineCanary: true})
	default:
		Fail("a document is neither an object nor an array: " + doc)
	}
	var b bytes.Buffer
	Expect(json.NewEncoder(&b).Encode(v)).To(Succeed())
	return b.String()
}

// checkOffline validates real documents, and a spoiled copy of the first,
// against each schema with every stock validator found.
func checkOffline(docs map[string][]string) {
	GinkgoHelper()
	pythons := stockPythons()
	Expect(pythons).NotTo(BeEmpty(), "no python3 with jsonschema: install python3-jsonschema (make deps)")
	for _, py := range pythons {
		for _, schema := range slices.Sorted(func(yield func(string) bool) {
			for k := range docs {
				if !yield(k) {
					return
				}
			}
		}) {
			code, out := stockValidate(py, schema, docs[schema]...)
			Expect(code).To(Equal(0), "%s -m jsonschema %s on real output:\n%s", py, schema, out)
			code, out = stockValidate(py, schema, spoil(docs[schema][0]))
			Expect(code).NotTo(Equal(0), "%s -m jsonschema %s accepted an invalid document", py, schema)
			Expect(out).To(ContainSubstring(offlineCanary), "%s -m jsonschema %s refused the invalid document for its canary, not for a failure of its own:\n%s", py, schema, out)
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
			for _, ref := range refsOf(readSchema(filepath.Base(p))) {
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
