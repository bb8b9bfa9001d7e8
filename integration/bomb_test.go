package integration_test

import (
	"github.com/ccm-fleet/ccm/internal/hostile"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// Every loader of the real binaries refuses the alias bomb at once: each
// run under a 1 GiB memory limit exits 1 with one line naming the problem,
// before connecting anywhere (CCM_SERVER points at a closed port). The
// limit is on the memory a process writes (RLIMIT_DATA, `ulimit -d`), not
// on its address space: an idle Go program reserves most of a gigabyte of
// that, and a 1 GiB address-space limit made the runtime fail at random.
var _ = Describe("the binaries with an alias bomb", Ordered, func() {
	var agentBin, dir string

	BeforeAll(func() {
		agentBin = ccmAgentBin()
		dir = GinkgoT().TempDir()
		for name, doc := range map[string]string{
			"manifest.yaml": string(hostile.AliasBomb("data")),
			"data.yaml":     string(hostile.AliasBomb("web")),
			"facts.yaml":    string(hostile.AliasBomb("role")),
			"config.yaml":   string(hostile.AliasBomb("facts")),
			"policy.yaml":   string(hostile.AliasBomb("signers")),
			"auth.yaml":     string(hostile.AliasBomb("users")),
			"ok.yaml":       "ccm:\n  resources: []\n",
		} {
			Expect(os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o600)).To(Succeed())
		}
	})

	DescribeTable("exits 1 with one line naming the problem",
		func(bin func() string, args []string, want string) {
			cmd := exec.Command("/bin/sh", append([]string{"-c", `ulimit -d 1048576 && exec "$@"`, "sh", bin()}, args...)...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CCM_SERVER=nats://127.0.0.1:1", "XDG_CONFIG_HOME="+dir)
			start := time.Now()
			s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
			Expect(err).ToNot(HaveOccurred())
			Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit(1))
			GinkgoWriter.Printf("%s %s: %s\n", filepath.Base(bin()), strings.Join(args, " "), time.Since(start))
			lines := strings.Split(strings.TrimSpace(string(s.Err.Contents())), "\n")
			Expect(lines).To(HaveLen(1), "stderr: %s", s.Err.Contents())
			Expect(lines[0]).To(ContainSubstring(want))
			Expect(lines[0]).To(ContainSubstring("YAML anchors are not accepted"))
		},
		Entry("ccm-agent apply", func() string { return agentBin }, []string{"apply", "manifest.yaml"}, "manifest manifest.yaml: data.a0"),
		Entry("ccm-orch apply", func() string { return orchBin }, []string{"apply", "manifest.yaml"}, "manifest manifest.yaml: data.a0"),
		Entry("ccm-agent apply --data", func() string { return agentBin }, []string{"apply", "--data", "data.yaml", "ok.yaml"}, "--data data.yaml: web.a0"),
		Entry("ccm-agent facts --facts-file", func() string { return agentBin }, []string{"facts", "--facts-file", "facts.yaml"}, "facts file facts.yaml: role.a0"),
		Entry("ccm-agent run --config", func() string { return agentBin }, []string{"run", "--config", "config.yaml"}, "config config.yaml: facts.a0"),
		Entry("ccm-agent run --policy", func() string { return agentBin }, []string{"run", "--identity", "web1", "--policy", "policy.yaml"}, "policy policy.yaml: signers.a0"),
		Entry("ccm-orch broker --auth-file", func() string { return orchBin }, []string{"broker", "--listen", "127.0.0.1:0", "--auth-file", "auth.yaml"}, "auth file auth.yaml: invalid broker auth file: users.a0"),
	)
})
