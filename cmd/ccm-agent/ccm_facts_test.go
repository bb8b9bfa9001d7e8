package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// These specs hold "ccm-agent facts" to what "ccm facts" prints (CCM
// bd56277, run side by side): JSON indented by two spaces by default,
// --yaml for YAML, and a query's result printed as JSON ("debian" in
// quotes) or, with --yaml, as YAML followed by an empty line.
var _ = Describe("ccm-agent facts as CCM prints them", func() {
	It("prints every fact as JSON indented by two spaces by default", func() {
		code, out, errOut := agent("facts", "--identity", "node1")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(out).To(HavePrefix("{\n  \"arch\": "))
		Expect(out).To(HaveSuffix("\n}\n"))
		var f map[string]any
		Expect(json.Unmarshal([]byte(out), &f)).To(Succeed())
		Expect(f).To(HaveKeyWithValue("identity", "node1"))
		Expect(f).To(HaveKey("host"))
	})

	It("prints YAML with --yaml, as CCM's facts --yaml", func() {
		code, out, errOut := agent("facts", "--yaml", "--fact", "role=web")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(out).To(HavePrefix("arch: "))
		Expect(out).To(ContainSubstring("\nrole: web\n"))
		Expect(out).To(HaveSuffix("\n\n"))
		var f map[string]any
		Expect(yaml.Unmarshal([]byte(out), &f)).To(Succeed())
		Expect(f).To(HaveKeyWithValue("role", "web"))
	})

	It("prints a query's scalar result as JSON: quoted, with a newline", func() {
		code, out, _ := agent("facts", "os", "--fact", "os=custom")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("\"custom\"\n"))

		code, out, _ = agent("facts", "cpus", "--fact", "cpus=4")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("\"4\"\n"))
	})

	It("prints a query's map result as indented JSON, and as YAML with --yaml", func() {
		ff := filepath.Join(GinkgoT().TempDir(), "facts.yaml")
		Expect(os.WriteFile(ff, []byte("app:\n  port: \"80\"\n"), 0o644)).To(Succeed())
		code, out, _ := agent("facts", "--facts-file", ff, "app")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("{\n  \"port\": \"80\"\n}\n"))

		code, out, _ = agent("facts", "--yaml", "--facts-file", ff, "app")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("port: \"80\"\n\n"))

		code, out, _ = agent("facts", "--yaml", "os", "--fact", "os=custom")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("custom\n\n"))
	})

	It("reads an array element by index, as gjson's path does", func() {
		code, out, _ := agent("facts", "cpu.info.0.cpu")
		Expect(code).To(Equal(0))
		Expect(strings.TrimSpace(out)).To(Equal("0"))
	})

	It("keeps --json, the old spelling of the default", func() {
		code, out, _ := agent("facts", "--json", "os", "--fact", "os=custom")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("\"custom\"\n"))
	})

	It("refuses --json with --yaml", func() {
		code, _, errOut := agent("facts", "--json", "--yaml")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("--json and --yaml"))
	})
})
