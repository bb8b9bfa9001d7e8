package manifest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

const schemaPath = "../schemas/manifest.schema.json"

// compileSchema compiles the repository's manifest schema.
func compileSchema() *jsonschema.Schema {
	GinkgoHelper()
	f, err := os.Open(schemaPath)
	Expect(err).ToNot(HaveOccurred())
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	Expect(err).ToNot(HaveOccurred())
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	Expect(c.AddResource("manifest.schema.json", doc)).To(Succeed())
	s, err := c.Compile("manifest.schema.json")
	Expect(err).ToNot(HaveOccurred())
	return s
}

// asInstance converts a YAML or JSON manifest into what the validator reads.
func asInstance(doc []byte) any {
	GinkgoHelper()
	js, err := protocol.YAMLToJSON(doc, protocol.Limits{})
	Expect(err).ToNot(HaveOccurred())
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	Expect(err).ToNot(HaveOccurred())
	return v
}

var _ = Describe("the manifest JSON schema", func() {
	var schema *jsonschema.Schema
	BeforeEach(func() { schema = compileSchema() })

	It("accepts every example, and so does Parse", func() {
		examples, err := filepath.Glob("../examples/*.yaml")
		Expect(err).ToNot(HaveOccurred())
		Expect(examples).ToNot(BeEmpty())
		for _, path := range examples {
			body, err := os.ReadFile(path)
			Expect(err).ToNot(HaveOccurred())
			Expect(schema.Validate(asInstance(body))).To(Succeed(), path)
			m, err := manifest.Load(path)
			Expect(err).ToNot(HaveOccurred(), path)
			_, err = m.Resolve(manifest.RunOptions{Facts: map[string]any{"os": "debian", "hostname": "web1"}})
			Expect(err).ToNot(HaveOccurred(), path)
		}
	})

	DescribeTable("rejects what Parse rejects",
		func(doc string) {
			Expect(schema.Validate(asInstance([]byte(doc)))).ToNot(Succeed())
			_, err := manifest.Parse([]byte(doc), manifest.ParseOptions{})
			Expect(err).To(HaveOccurred())
		},
		Entry("an unknown top-level key", "datum: {}\n"),
		Entry("an unknown ccm key", "ccm: {resource: []}\n"),
		Entry("an unknown merge", "hierarchy: {merge: shallow}\n"),
		Entry("an unknown type", "ccm: {resources: [{pakage: [{nginx: {}}]}]}\n"),
		Entry("an unknown property", "ccm: {resources: [{file: [{/etc/motd: {colour: red}}]}]}\n"),
		Entry("an unknown property in the single-object form", "ccm: {resources: [{package: {name: [a, b], colour: red}}]}\n"),
		Entry("an unknown control key", "ccm: {resources: [{exec: [{/bin/true: {control: {iff: x}}}]}]}\n"),
		Entry("a name inside a list entry", "ccm: {resources: [{package: [{nginx: {name: x}}]}]}\n"),
		Entry("the single-object form without a name", "ccm: {resources: [{package: {ensure: present}}]}\n"),
		Entry("two types in one item", "ccm: {resources: [{package: [{a: {}}], exec: [{b: {}}]}]}\n"),
		Entry("two names in one entry", "ccm: {resources: [{package: [{a: {}, b: {}}]}]}\n"),
		Entry("a non-boolean fail_on_error", "ccm: {fail_on_error: yes please}\n"),
	)

	It("lists exactly the properties each resource type accepts", func() {
		body, err := os.ReadFile(schemaPath)
		Expect(err).ToNot(HaveOccurred())
		var raw struct {
			Defs map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"$defs"`
		}
		Expect(json.Unmarshal(body, &raw)).To(Succeed())
		common := raw.Defs["common"].Properties
		for _, t := range manifest.BuiltinTypes() {
			var got []string
			for k := range common {
				if k != "*" {
					got = append(got, k)
				}
			}
			for k := range raw.Defs[t.Name()+"_properties"].Properties {
				got = append(got, k)
			}
			got = append(got, "name")
			slices.Sort(got)
			Expect(got).To(Equal(manifest.PropertyNames(t)), t.Name())
		}
	})
})

var _ = Describe("health checks in the manifest JSON schema", func() {
	It("accepts them, and so does Parse; the schema refuses a check without a command", func() {
		schema := compileSchema()
		doc := []byte(`ccm:
  resources:
    - service:
        - nginx:
            ensure: running
            health_checks:
              - {name: http, command: "/usr/lib/nagios/plugins/check_http -H localhost", timeout: 5s, tries: 3, try_sleep: 2s}
`)
		Expect(schema.Validate(asInstance(doc))).To(Succeed())
		_, err := manifest.Parse(doc, manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		bad := []byte(`ccm:
  resources:
    - service:
        - nginx:
            health_checks:
              - {name: http}
`)
		// Parse leaves properties to the engine, which refuses the check
		// when it prepares the resource (see the engine's tests).
		Expect(schema.Validate(asInstance(bad))).ToNot(Succeed())
	})
})
