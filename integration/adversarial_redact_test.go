package integration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/internal/proctest"
	"github.com/ccm-fleet/ccm/protocol"
)

// Round 3, secrets and audit: the real ccm-agent and ccm-orch, one It per
// finding, each with its own canary.
var _ = Describe("Adversarial round 3: redaction and audit", func() {
	const identity = "db-1"
	var (
		dir, url, state, policy string
		ops                     signingKey
		agentProc               *gexec.Session
	)

	orch := func(args ...string) (int, string, string) {
		GinkgoHelper()
		return runOrch(append(args, "--server", url)...)
	}
	startAgent := func() {
		GinkgoHelper()
		agentProc = startProcess(ccmAgentBin(), "--debug", "run", "--identity", identity, "--fact", "os=debian",
			"--state-dir", state, "--heartbeat", "1s", "--server", url, "--policy", policy)
		Eventually(func() string {
			_, out, _ := orch("discover", "--host", identity)
			return out
		}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(ContainSubstring(identity))
	}
	// requestID is the request id ccm-orch printed.
	requestID := func(out string) string {
		GinkgoHelper()
		m := regexp.MustCompile(`\(request (\w+),`).FindStringSubmatch(out)
		Expect(m).To(HaveLen(2), out)
		return m[1]
	}
	auditLines := func(id string) []agent.AuditRecord {
		data, err := os.ReadFile(filepath.Join(state, agent.AuditFileName))
		if err != nil {
			return nil
		}
		var out []agent.AuditRecord
		for _, line := range proctest.CompleteLines(data) {
			var r agent.AuditRecord
			Expect(json.Unmarshal([]byte(line), &r)).To(Succeed(), line)
			if r.RequestID == id {
				out = append(out, r)
			}
		}
		return out
	}
	// expectNoCanary looks for canary in ccm-orch's reply output, in
	// `ccm-orch history show` (text and JSON), the audit log and the
	// agent's stderr; shape is a text the reply must show instead, logged
	// one the agent's log must hold (so the right output is looked at).
	expectNoCanary := func(canary, out, shape, logged string) {
		GinkgoHelper()
		Expect(out).To(ContainSubstring(shape), "the reply keeps the message's shape")
		Expect(out).ToNot(ContainSubstring(canary), "the reply")
		id := requestID(out)
		var shown string
		Eventually(func() string {
			_, shown, _ = orch("history", "show", id)
			return shown
		}).WithTimeout(30 * time.Second).Should(ContainSubstring(identity))
		Expect(shown).To(ContainSubstring(shape), "history keeps the message's shape")
		Expect(shown).ToNot(ContainSubstring(canary), "ccm-orch history show")
		_, shownJSON, _ := orch("history", "show", id, "--json")
		Expect(shownJSON).To(ContainSubstring(identity))
		Expect(shownJSON).ToNot(ContainSubstring(canary), "ccm-orch history show --json")
		Expect(auditLines(id)).ToNot(BeEmpty())
		audit, err := os.ReadFile(filepath.Join(state, agent.AuditFileName))
		Expect(err).ToNot(HaveOccurred())
		Expect(string(audit)).ToNot(ContainSubstring(canary), "the audit log")
		Expect(string(agentProc.Err.Contents())).To(ContainSubstring(logged), "the agent logged the failure")
		Expect(string(agentProc.Err.Contents())).ToNot(ContainSubstring(canary), "the agent's log")
		Expect(string(agentProc.Out.Contents())).ToNot(ContainSubstring(canary), "the agent's output")
	}
	// script writes an executable that prints canary on stderr and exits
	// with code.
	script := func(name, canary string, code int) string {
		path := filepath.Join(dir, name)
		Expect(os.WriteFile(path, []byte(fmt.Sprintf("#!/bin/sh\necho 'secret %s' >&2\nexit %d\n", canary, code)), 0o755)).To(Succeed())
		return path
	}

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		state = filepath.Join(dir, "state")
		b := brokertest.Start(GinkgoT())
		url = b.ClientURL()
		provisionHistory(url, 1)
		ops = newSigningKey(dir, "ops")
		policy = policyFile(dir, signerEntry("ops", ops.pub, "exec, file",
			"exec:",
			fmt.Sprintf(`  commands: ["%[1]s/fail.sh", "%[1]s/check.sh", "%[1]s/slow.sh", "/usr/bin/touch *"]`, dir),
			"file:",
			fmt.Sprintf(`  paths: ["%s/"]`, dir)))
		startAgent()
	})

	It("finding 5: keeps a failing sensitive exec's stderr out of the reply, history, audit and log", func() {
		canary := "CANARY-r3-exec-stderr-2b81"
		cmd := script("fail.sh", canary, 3)
		code, out, errOut := orch("ensure", "exec", cmd, "--sensitive", "--host", identity, "--key", ops.seedFile)
		Expect(code).To(Equal(2), "stdout %s\nstderr %s", out, errOut)
		Expect(errOut).ToNot(ContainSubstring(canary))
		expectNoCanary(canary, out, "exit code 3 is not one of [0]: [redacted]", "resource=exec#"+cmd+" provider=")
	})

	It("finding 9: keeps a sensitive resource's health-check output and its templated owner from sensitive data out of every record", func() {
		canary := "CANARY-r3-health-77d0"
		check := script("check.sh", canary, 2)
		target := filepath.Join(dir, "app.conf")
		code, out, errOut := orch("ensure", "file", target, "--content", "x\n", "--owner", "root", "--group", "root", "--mode", "0600",
			"--sensitive", "--check", check, "--host", identity, "--key", ops.seedFile)
		Expect(code).To(Equal(2), "stdout %s\nstderr %s", out, errOut)
		Expect(errOut).ToNot(ContainSubstring(canary))
		expectNoCanary(canary, out, "CRITICAL: [redacted]", "check="+check+" status=CRITICAL")

		owner := "canary-r3-owner-5e1c"
		manifest := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(manifest, []byte(fmt.Sprintf(`data:
  db:
    password: %s
sensitive_data: [db.password]
ccm:
  resources:
    - file:
        - %s/db.conf:
            ensure: present
            content: "x\n"
            owner: "{{ lookup('data.db.password') }}"
            group: root
            mode: "0600"
`, owner, dir)), 0o644)).To(Succeed())
		code, out, errOut = orch("apply", manifest, "--host", identity, "--key", ops.seedFile)
		Expect(code).To(Equal(2), "stdout %s\nstderr %s", out, errOut)
		Expect(errOut).ToNot(ContainSubstring(owner))
		expectNoCanary(owner, out, `could not lookup user "[redacted]": unknown user [redacted]`, "resource=file#"+dir+"/db.conf provider=")
		Expect(filepath.Join(dir, "db.conf")).ToNot(BeAnExistingFile())
	})

	It("finding 10: audits a scope refusal made as the resource was about to run as forbidden, with its rule", func() {
		canary := filepath.Join(dir, "canary-r3-scope-c41a")
		code, out, errOut := orch("ensure", "exec", fmt.Sprintf("{{ '/bin/sh' }} -c 'touch %s'", canary), "--host", identity, "--key", ops.seedFile)
		Expect(code).To(Equal(2), "stdout %s\nstderr %s", out, errOut)
		Expect(out).To(ContainSubstring("forbidden"))
		Expect(canary).ToNot(BeAnExistingFile())
		id := requestID(out)
		lines := auditLines(id)
		Expect(lines).ToNot(BeEmpty())
		last := lines[len(lines)-1]
		Expect(last.Result).ToNot(BeNil())
		Expect(last.Result.Error).ToNot(BeNil())
		Expect(last.Result.Error.Code).To(Equal(protocol.CodeForbidden))
		Expect(last.Decision).To(Equal("forbidden"))
		Expect(last.Rule).To(ContainSubstring("exec.commands"))
		Expect(last.Value).To(ContainSubstring("/bin/sh"))
		for _, l := range lines {
			if l.Result != nil && l.Result.Error != nil {
				Expect(l.Decision).ToNot(Equal(agent.DecisionAccepted), "no accepted line over a refused result")
			}
		}
	})

	It("finding 12: writes the interrupted line at restart with the subject, signer and resources of the request the agent died on", func() {
		canary := filepath.Join(dir, "canary-r3-interrupted-9f02")
		slow := filepath.Join(dir, "slow.sh")
		Expect(os.WriteFile(slow, []byte(fmt.Sprintf("#!/bin/sh\nsleep 30\ntouch %s\n", canary)), 0o755)).To(Succeed())
		// ccm-orch waits for a reply that never comes; the agent dies first.
		startProcess(orchBin, "ensure", "exec", slow, "--host", identity, "--key", ops.seedFile, "--server", url, "--reply-timeout", "5s")
		var accepted agent.AuditRecord
		Eventually(func() []agent.AuditRecord {
			var all []agent.AuditRecord
			f, err := os.ReadFile(filepath.Join(state, agent.AuditFileName))
			if err != nil {
				return nil
			}
			for line := range strings.Lines(string(f)) {
				var r agent.AuditRecord
				if json.Unmarshal([]byte(line), &r) == nil && len(r.Resources) == 1 && r.Resources[0] == "exec#"+slow {
					all = append(all, r)
				}
			}
			return all
		}).WithTimeout(30 * time.Second).Should(ContainElement(HaveField("Decision", agent.DecisionAccepted), &accepted))
		Expect(agentProc.Signal(syscall.SIGKILL)).ToNot(BeNil())
		Eventually(agentProc).WithTimeout(10 * time.Second).Should(gexec.Exit())

		startAgent()
		var lines []agent.AuditRecord
		Eventually(func() []agent.AuditRecord {
			lines = auditLines(accepted.RequestID)
			return lines
		}).WithTimeout(30 * time.Second).Should(ContainElement(HaveField("Decision", string(protocol.CodeInterrupted))))
		var interrupted agent.AuditRecord
		Expect(lines).To(ContainElement(HaveField("Decision", string(protocol.CodeInterrupted)), &interrupted))
		Expect(interrupted.Subject).To(Equal(accepted.Subject))
		Expect(interrupted.Subject).ToNot(BeEmpty())
		Expect(interrupted.Signer).To(Equal(agent.AuditSigner{Name: "ops", Key: ops.pub}))
		Expect(interrupted.Resources).To(Equal([]string{"exec#" + slow}))
		Consistently(canary).WithTimeout(2*time.Second).ShouldNot(BeAnExistingFile(), "an interrupted request is not run again")
	})
})
