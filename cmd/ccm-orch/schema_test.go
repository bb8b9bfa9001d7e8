package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

// outputSchemas compiles every schema under schemas/ and returns them by
// file name.
func outputSchemas() map[string]*jsonschema.Schema {
	GinkgoHelper()
	paths, err := filepath.Glob("../../schemas/*.schema.json")
	Expect(err).NotTo(HaveOccurred())
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, p := range paths {
		f, err := os.Open(p)
		Expect(err).NotTo(HaveOccurred())
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		Expect(err).NotTo(HaveOccurred(), p)
		Expect(c.AddResource("https://github.com/ccm-fleet/ccm/schemas/"+filepath.Base(p), doc)).To(Succeed())
	}
	out := map[string]*jsonschema.Schema{}
	for _, p := range paths {
		s, err := c.Compile("https://github.com/ccm-fleet/ccm/schemas/" + filepath.Base(p))
		Expect(err).NotTo(HaveOccurred(), p)
		out[filepath.Base(p)] = s
	}
	return out
}

// instance decodes one JSON document the way the validator reads it.
func instance(doc string) any {
	GinkgoHelper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	Expect(err).NotTo(HaveOccurred(), doc)
	return v
}

var _ = Describe("the published JSON schemas of ccm-orch's output", Ordered, func() {
	var (
		fl      *fleettest.Fleet
		server  []string
		schemas map[string]*jsonschema.Schema
		dir     string
		// seen counts the documents validated per schema, so a schema
		// nothing was checked against fails the suite.
		seen = map[string]int{}
		// offline keeps every document validated, for the stock
		// validator at the end.
		offline = offlineDocs{}
	)
	BeforeAll(func() {
		schemas = outputSchemas()
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true, Config: agent.Config{HistoryRetry: 100 * time.Millisecond}},
			6, nil, "os=debian,rhel", "role=web,db")
		server = []string{"--server", fl.URL()}
		dir = GinkgoT().TempDir()
	})
	with := func(args ...string) []string { return append(args, server...) }
	validate := func(schema, doc string) {
		GinkgoHelper()
		s := schemas[schema]
		Expect(s).NotTo(BeNil(), schema)
		Expect(s.Validate(instance(doc))).To(Succeed(), "%s:\n%s", schema, doc)
		seen[schema]++
		offline.add(schema, doc)
	}
	// requestID is the id of a --json result.
	requestID := func(doc string) string {
		var r struct {
			RequestID string `json:"request_id"`
		}
		Expect(json.Unmarshal([]byte(doc), &r)).To(Succeed())
		return r.RequestID
	}
	var ids []string

	It("describes discover --json", func() {
		code, out, errOut := orch(with("discover", "--json")...)
		Expect(code).To(Equal(0), errOut)
		validate("discover.schema.json", out)
	})

	It("describes ensure --json for changes, failures, drift and no reply", func() {
		motd := filepath.Join(dir, "{{ lookup('facts.identity') }}", "motd")
		for _, args := range [][]string{
			{"ensure", "file", motd, "--content", "hi", "--owner", "root", "--group", "root", "--mode", "0644", "--json"},
			{"ensure", "file", motd, "--content", "changed", "--owner", "root", "--group", "root", "--mode", "0644", "--noop", "--json"},
			{"ensure", "exec", "/bin/false", "--where", "role=db", "--json"},
			{"ensure", "exec", "/bin/true", "--host", "sim-0001", "--host", "ghost-1", "--reply-timeout", "300ms", "--json"},
			{"ensure", "package", "no-such-package-ccm", "--provider", "apt", "--noop", "--where", "os=rhel", "--json"},
			{"ensure", "exec", "/bin/true", "--sample", "2", "--json"},
		} {
			_, out, errOut := orch(with(args...)...)
			Expect(out).NotTo(BeEmpty(), errOut)
			validate("result.schema.json", out)
			ids = append(ids, requestID(out))
		}
	})

	It("describes every --jsonl line, each saying its kind", func() {
		manifest := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(manifest, []byte("ccm:\n  resources:\n    - exec:\n        - /bin/true: {}\n        - /bin/false:\n            control: {if: \"facts.os == 'rhel'\"}\n"), 0o600)).To(Succeed())
		code, out, errOut := orch(with("apply", manifest, "--jsonl")...)
		Expect(code).To(Equal(2), errOut+out)
		l := lines(out)
		Expect(l).To(HaveLen(6 + 1))
		kinds := map[string]int{}
		for _, line := range l {
			validate("run-line.schema.json", line)
			var k struct{ Kind string }
			Expect(json.Unmarshal([]byte(line), &k)).To(Succeed())
			kinds[k.Kind]++
		}
		Expect(kinds).To(Equal(map[string]int{"host_result": 6, "result": 1}))
		var last struct{ Kind string }
		Expect(json.Unmarshal([]byte(l[len(l)-1]), &last)).To(Succeed())
		Expect(last.Kind).To(Equal("result"), "the result is the last line")

		code, out, errOut = orch(with("audit", manifest, "--json")...)
		Expect(code).To(Equal(5), "under noop every exec would run: "+errOut)
		validate("result.schema.json", out)
	})

	It("describes history list, show and host --json", func() {
		code, out, errOut := orch(with("history", "list", "--json")...)
		Expect(code).To(Equal(0), errOut)
		validate("history-list.schema.json", out)
		for _, id := range ids {
			_, out, errOut = orch(with("history", "show", id, "--json")...)
			Expect(out).NotTo(BeEmpty(), errOut)
			validate("result.schema.json", out)
		}
		code, out, errOut = orch(with("history", "host", "sim-0001", "--json")...)
		Expect(code).To(Equal(0), errOut)
		validate("history-host.schema.json", out)
	})

	It("describes assignments list, show and status --json", func() {
		site := filepath.Join(dir, "assigned.yaml")
		Expect(os.WriteFile(site, []byte("ccm:\n  resources:\n    - exec:\n        - /bin/true: {}\n"), 0o600)).To(Succeed())
		code, _, errOut := orch(with("assign", "schema", site, "--where", "role=web", "--interval", "1h")...)
		Expect(code).To(Equal(0), errOut)
		code, out, errOut := orch(with("assignments", "list", "--json")...)
		Expect(code).To(Equal(0), errOut)
		validate("assignments.schema.json", out)
		code, out, errOut = orch(with("assignments", "show", "schema", "--json")...)
		Expect(code).To(Equal(0), errOut)
		validate("assignments.schema.json", out)
		Eventually(func() int {
			code, _, _ := orch(with("status", "--json")...)
			return code
		}).WithTimeout(20*time.Second).Should(Equal(0), "the web hosts ran it")
		_, out, _ = orch(with("status", "--json")...)
		validate("status.schema.json", out)
		Expect(out).To(MatchRegexp(`"counts": \{\s*"converged": \d+\s*\}`))
		code, out, errOut = orch(with("status", "--where", "role=web", "--sample", "1", "--seed", "3", "--json")...)
		Expect(code).To(Equal(0), errOut)
		validate("status.schema.json", out)
		Expect(out).To(MatchRegexp(`"counts": \{\s*"converged": 1\s*\}`))
		Expect(out).To(MatchRegexp(`"sample": \{\s*"seed": 3,\s*"of": 4,\s*"kept": 1\s*\}`))
		code, _, _ = orch(with("assignments", "rm", "schema")...)
		Expect(code).To(Equal(0))
		code, out, errOut = orch(with("assignments", "show", "schema", "--history", "--json")...)
		Expect(code).To(Equal(0), errOut)
		validate("assignments.schema.json", out)
	})

	It("are strict: a key they do not describe or a missing required key fails", func() {
		_, out, _ := orch(with("ensure", "exec", "/bin/true", "--host", "sim-0002", "--json")...)
		var doc map[string]any
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
		enc := func(v any) string {
			var b bytes.Buffer
			Expect(json.NewEncoder(&b).Encode(v)).To(Succeed())
			return b.String()
		}
		doc["colour"] = "red"
		Expect(schemas["result.schema.json"].Validate(instance(enc(doc)))).NotTo(Succeed())
		delete(doc, "colour")
		delete(doc, "exit_code")
		Expect(schemas["result.schema.json"].Validate(instance(enc(doc)))).NotTo(Succeed())
		Expect(schemas["run-line.schema.json"].Validate(instance(`{"identity":"a","outcome":"ok","events":[],"error":null,"duration":1}`))).
			NotTo(Succeed(), "a --jsonl line without its kind")
	})

	It("describes the CCM request document ensure --request sends", func() {
		doc := `{"protocol": "io.choria.ccm.v1.resource.ensure.request", "type": "exec", "properties": {"name": "/bin/true"}}`
		validate("ensure_request.schema.json", doc)
		file := filepath.Join(dir, "request.json")
		Expect(os.WriteFile(file, []byte(doc), 0o600)).To(Succeed())
		code, out, errOut := orch(with("ensure", "--request", file, "--json")...)
		Expect(code).To(Equal(0), errOut)
		validate("result.schema.json", out)
	})

	It("validate the same output offline with the stock Python validator, and refuse a wrong document", func() {
		checkOffline(offline)
	})

	It("were each checked against real output", func() {
		for name := range schemas {
			switch name {
			case "manifest.schema.json":
				continue // the manifest package's tests check it
			case "ensure_response.schema.json":
				continue // ccm-agent's output: the integration suite checks it against ensure api pipe
			}
			Expect(seen).To(HaveKey(name), "no real output was validated against "+name)
		}
	})
})
