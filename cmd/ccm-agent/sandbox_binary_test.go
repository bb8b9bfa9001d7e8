package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// Issue 39, findings 1, 2 and 6, against the real binary: before the
// template sandbox these inputs killed the process with Go's "fatal error:
// stack overflow" (exit 2, nothing recoverable), or leaked root's
// environment. A crash is only ever reproduced in a subprocess.
var _ = Describe("ccm-agent templates in the sandbox (real binary, issue 39)", Ordered, func() {
	var bin, dir string
	BeforeAll(func() {
		var err error
		bin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
	})
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	// run runs the binary and requires that it ended by itself with a
	// clear error, not a runtime crash.
	run := func(env []string, args ...string) (int, string) {
		GinkgoHelper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		Eventually(s).WithTimeout(120 * time.Second).Should(gexec.Exit())
		out := string(s.Out.Contents()) + string(s.Err.Contents())
		Expect(out).NotTo(ContainSubstring("fatal error"))
		Expect(out).NotTo(ContainSubstring("stack overflow"))
		Expect(out).NotTo(ContainSubstring("goroutine "))
		return s.ExitCode(), out
	}

	It("refuses a file whose content is a block that yields itself, under noop, writing nothing (finding 1)", func() {
		target := filepath.Join(dir, "motd")
		code, out := run(nil, "ensure", "file", target, "--content", `{{ jet("[[ block r() ]][[ yield r() ]][[ end ]]") }}`, "--noop")
		Expect(code).To(Equal(1), out)
		Expect(out).To(ContainSubstring("block r calls itself (recursion) and is not allowed in the template sandbox"))
		Expect(target).NotTo(BeAnExistingFile())
	})

	It("refuses the same value in hiera data (finding 1)", func() {
		input := filepath.Join(dir, "data.json")
		Expect(os.WriteFile(input, []byte(`{"hierarchy": {"order": ["fqdn:${ lookup('facts.fqdn') }"]},
 "data": {"test": "{{ jet(\"[[ block r() ]][[ yield r() ]][[ end ]]\") }}"}}`), 0o644)).To(Succeed())
		code, out := run(nil, "hiera", "parse", input, "fqdn=web1")
		Expect(code).To(Equal(1), out)
		Expect(out).To(ContainSubstring("data.test"))
		Expect(out).To(ContainSubstring("not allowed in the template sandbox"))
	})

	It("ends a scaffold whose Go file renders itself at the depth limit, writing nothing (finding 1)", func() {
		src, target := filepath.Join(dir, "src"), filepath.Join(dir, "target")
		Expect(os.Mkdir(src, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(src, "self.txt"), []byte(`x{{ render "self.txt" . }}`), 0o644)).To(Succeed())
		code, out := run(nil, "ensure", "scaffold", target, "--source", src, "--engine", "go")
		Expect(code).To(Equal(2), out) // the resource failed; the process did not crash
		Expect(out).To(ContainSubstring("templates nested more than 10 deep (depth limit)"))
		Expect(target).NotTo(BeADirectory())
	})

	It("refuses a scaffold's Go template reading the environment, leaking nothing (finding 2)", func() {
		src, target := filepath.Join(dir, "src"), filepath.Join(dir, "target")
		Expect(os.Mkdir(src, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(src, "a.conf"), []byte(`x={{ expandenv "$CCM_CANARY" }}`), 0o644)).To(Succeed())
		code, out := run([]string{"CCM_CANARY=canary-env-5b7d"}, "ensure", "scaffold", target, "--source", src, "--engine", "go")
		Expect(code).To(Equal(2), out)
		Expect(out).To(ContainSubstring("expandenv is not allowed in the template sandbox"))
		Expect(out).NotTo(ContainSubstring("canary-env-5b7d"))
		Expect(filepath.Join(target, "a.conf")).NotTo(BeAnExistingFile())
	})

	It("ccm-orch policy check refuses a manifest holding the same content instead of crashing (finding 1)", func() {
		orch, err := gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-orch")
		Expect(err).ToNot(HaveOccurred())
		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		pub, err := kp.PublicKey()
		Expect(err).ToNot(HaveOccurred())
		policy := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(policy, []byte("signers:\n  - name: ops\n    public_key: "+pub+"\n    allow: [file]\n"), 0o644)).To(Succeed())
		facts := filepath.Join(dir, "facts.yaml")
		Expect(os.WriteFile(facts, []byte("identity: web1\n"), 0o644)).To(Succeed())
		target := filepath.Join(dir, "motd")
		site := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(site, []byte(`ccm:
  resources:
    - file:
        - `+target+`:
            content: '{{ jet("[[ block r() ]][[ yield r() ]][[ end ]]") }}'
            owner: root
            group: root
            mode: "0644"
`), 0o644)).To(Succeed())
		cmd := exec.Command(orch, "policy", "check", policy, "--key", "ops", "--manifest", site, "--facts", facts, "--noop")
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		Eventually(s).WithTimeout(120 * time.Second).Should(gexec.Exit())
		out := string(s.Out.Contents()) + string(s.Err.Contents())
		Expect(out).NotTo(ContainSubstring("fatal error"))
		Expect(s.ExitCode()).To(Equal(1), out)
		Expect(out).To(ContainSubstring("block r calls itself (recursion) and is not allowed in the template sandbox"))
		Expect(target).NotTo(BeAnExistingFile())
	})

	It("bounds a huge repeat and a loop over ints(0, 1e12) under noop (finding 6)", func() {
		target := filepath.Join(dir, "motd")
		code, out := run(nil, "ensure", "file", target, "--content", `{{ jet("[[ repeat(\"x\", 1000000000000) ]]") }}`, "--noop")
		Expect(code).To(Equal(1), out)
		Expect(out).To(ContainSubstring("(values limit)"))
		code, out = run(nil, "ensure", "file", target, "--content", `{{ jet("[[ range i := ints(0, 1000000000000) ]]x[[ end ]]") }}`, "--noop")
		Expect(code).To(Equal(1), out)
		Expect(out).To(ContainSubstring("(steps limit)"))
		Expect(target).NotTo(BeAnExistingFile())
	})
})
