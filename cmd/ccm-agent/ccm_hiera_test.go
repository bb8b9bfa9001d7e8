package main

import (
	"encoding/json"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The "CLI example" of CCM's hiera page (docs/content/hiera/_index.md of
// github.com/choria-io/ccm), with the outputs it prints.
var _ = Describe("ccm-agent hiera", func() {
	var dir, input string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		input = filepath.Join(dir, "data.json")
		Expect(os.WriteFile(input, []byte(`{
    "hierarchy": {
        "order": [
            "fqdn:${ lookup('facts.fqdn') }"
        ]
    },
    "data": {
        "test": "value"
    },
    "overrides": {
        "fqdn:my.fqdn.com": {
            "test": "override"
        }
    }
}`), 0o644)).To(Succeed())
	})

	It("parse prints the resolved data as indented JSON, facts given as key=value arguments", func() {
		code, out, errOut := agent("hiera", "parse", input, "fqdn=my.fqdn.com")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("{\n  \"test\": \"override\"\n}\n"))

		code, out, _ = agent("hiera", "parse", input, "fqdn=other.fqdn.com")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("{\n  \"test\": \"value\"\n}\n"))
	})

	It("parse --yaml prints YAML", func() {
		code, out, _ := agent("hiera", "parse", input, "fqdn=other.fqdn.com", "--yaml")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("test: value\n"))
	})

	It("parse --env prints HIERA_KEY=value lines (--env-prefix changes HIERA)", func() {
		code, out, _ := agent("hiera", "parse", input, "fqdn=other.fqdn.com", "--env")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("HIERA_TEST=value\n"))
		code, out, _ = agent("hiera", "parse", input, "fqdn=my.fqdn.com", "--env", "--env-prefix", "APP")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("APP_TEST=override\n"))
	})

	It("parse --env prints lists and maps as JSON and whole numbers as they are, sorted by key", func() {
		p := filepath.Join(dir, "typed.yaml")
		Expect(os.WriteFile(p, []byte("data:\n  port: 443\n  packages: [ca-certificates, nginx]\n  web: {tls: true}\n  ratio: 1.5\n"), 0o644)).To(Succeed())
		code, out, errOut := agent("hiera", "parse", p, "--env")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("HIERA_PACKAGES=[\"ca-certificates\",\"nginx\"]\nHIERA_PORT=443\nHIERA_RATIO=1.500000\nHIERA_WEB={\"tls\":true}\n"))
	})

	It("parse --yaml lays lists out as CCM does: not indented below their key", func() {
		p := filepath.Join(dir, "typed.yaml")
		Expect(os.WriteFile(p, []byte("data:\n  port: 443\n  packages: [ca-certificates, nginx]\n  web: {tls: true}\n  ratio: 1.5\n"), 0o644)).To(Succeed())
		code, out, _ := agent("hiera", "parse", p, "--yaml")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("packages:\n- ca-certificates\n- nginx\nport: 443\nratio: 1.5\nweb:\n  tls: true\n"))
	})

	It("parse --query prints one value; -D sets data over the resolved data", func() {
		code, out, _ := agent("hiera", "parse", input, "fqdn=my.fqdn.com", "--query", "test")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("\"override\"\n"))
		code, out, _ = agent("hiera", "parse", input, "fqdn=my.fqdn.com", "-D", "test=forced")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("{\n  \"test\": \"forced\"\n}\n"))
	})

	It("takes facts from a file and from the environment (-E), arguments over both", func() {
		ff := filepath.Join(dir, "facts.yaml")
		Expect(os.WriteFile(ff, []byte("fqdn: my.fqdn.com\n"), 0o644)).To(Succeed())
		code, out, _ := agent("hiera", "parse", input, "--facts", ff)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(`"override"`))
		code, out, _ = agent("hiera", "parse", input, "--facts", ff, "fqdn=other")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(`"value"`))

		GinkgoT().Setenv("CCM_HIERA_CANARY", "from-env")
		code, out, _ = agent("hiera", "facts", "-E", "--query", "CCM_HIERA_CANARY")
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("from-env\n"))
	})

	It("facts prints this host's facts as JSON with the arguments over them", func() {
		code, out, _ := agent("hiera", "facts", "role=web")
		Expect(code).To(Equal(0))
		var fs map[string]any
		Expect(json.Unmarshal([]byte(out), &fs)).To(Succeed())
		Expect(fs).To(HaveKeyWithValue("role", "web"))
		Expect(fs).To(HaveKey("host"))
	})

	It("refuses a missing input file with exit 1, naming it", func() {
		code, _, errOut := agent("hiera", "parse", filepath.Join(dir, "nosuch.yaml"))
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("nosuch.yaml"))
	})
})
