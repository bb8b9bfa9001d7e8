package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ccm-agent run --site and simulate --site", func() {
	DescribeTable("exits 1 before connecting on a site that is not a site name, naming the problem",
		func(args func(dir string) []string, want string) {
			dir := GinkgoT().TempDir()
			code, _, errOut := agent(append(args(dir), "--insecure", "--state-dir", dir, "--server", "nats://127.0.0.1:1")...)
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring(want))
			Expect(errOut).ToNot(ContainSubstring("NATS not reachable"))
		},
		Entry("run --site", func(string) []string { return []string{"run", "--identity", "web1", "--site", "fra.1"} },
			`site: bad_request: site name "fra.1": character at position 3 is not allowed`),
		Entry("site in the config file", func(dir string) []string {
			p := filepath.Join(dir, "agent.yaml")
			Expect(os.WriteFile(p, []byte("identity: web1\nsite: 'fra 1'\n"), 0o600)).To(Succeed())
			return []string{"run", "--config", p}
		}, `agent.yaml: invalid agent configuration: site: bad_request: site name "fra 1"`),
		Entry("a custom site fact naming another site", func(string) []string {
			return []string{"run", "--identity", "web1", "--site", "fra1", "--fact", "site=ams2"}
		}, `custom fact site=ams2 conflicts with the configured site "fra1"`),
		Entry("simulate --site", func(string) []string { return []string{"simulate", "--count", "1", "--site", "fra>"} },
			`site name "fra>": character at position 3 is not allowed`),
		Entry("simulate --vary site=", func(string) []string { return []string{"simulate", "--count", "1", "--vary", "site=fra1,ams.2"} },
			`site name "ams.2"`),
		Entry("simulate --site with --vary site=", func(string) []string {
			return []string{"simulate", "--count", "1", "--site", "fra1", "--vary", "site=fra1,ams2"}
		}, "--site fra1 and --vary site=fra1,ams2: give one or the other"),
	)
})
