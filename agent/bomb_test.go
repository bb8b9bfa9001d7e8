package agent_test

import (
	"github.com/ccm-fleet/ccm/internal/hostile"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
)

var _ = Describe("configuration and policy files with hostile input", func() {
	write := func(doc []byte) string {
		path := filepath.Join(GinkgoT().TempDir(), "file.yaml")
		Expect(os.WriteFile(path, doc, 0o600)).To(Succeed())
		return path
	}

	DescribeTable("LoadPolicy refuses them, naming the file and the key as written",
		func(doc []byte, want string) {
			path := write(doc)
			_, err := agent.LoadPolicy(path)
			Expect(err).To(MatchError(agent.ErrPolicy))
			Expect(err.Error()).To(Equal("policy " + path + ": " + want))
		},
		Entry("an alias bomb", hostile.AliasBomb("signers"), "signers.a0: YAML anchors are not accepted (line 2)"),
		Entry("an unknown key", []byte("signers:\n  - name: ops\n    colour: red\n"), `signers[0]: unknown key "colour"`),
		Entry("Shell", []byte("signers:\n  - name: ops\n    Shell: true\n"), `signers[0]: unknown key "Shell"`),
		Entry("INSECURE", []byte("INSECURE: true\n"), `unknown key "INSECURE"`),
		Entry("a key twice", []byte("signers:\n  - name: ops\n    name: dev\n"), `signers[0]: key "name" appears twice (line 3)`),
		Entry("a key twice in JSON", []byte(`{"signers":[{"shell":false,"shell":true}]}`), `signers[0]: key "shell" appears twice`),
		Entry("invalid UTF-8", []byte("signers:\n  - name: o\xffs\n"), "invalid UTF-8 at line 2 (byte 20)"),
	)

	DescribeTable("LoadConfig refuses them, naming the file and the key as written",
		func(doc []byte, want string) {
			path := write(doc)
			_, err := agent.LoadConfig(path)
			Expect(err).To(MatchError(agent.ErrConfig))
			Expect(err.Error()).To(Equal("config " + path + ": " + want))
		},
		Entry("an alias bomb", hostile.AliasBomb("facts"), "facts.a0: YAML anchors are not accepted (line 2)"),
		Entry("Identity", []byte("Identity: web1\n"), `unknown key "Identity"`),
		Entry("a key twice", []byte("identity: a\nidentity: b\n"), `key "identity" appears twice (line 2)`),
		Entry("invalid UTF-8", []byte("identity: w\xffb\n"), "invalid UTF-8 at line 1 (byte 11)"),
	)
})
