package main

import (
	"encoding/json"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Goss health checks as CCM's monitoring page shows them
// (docs/content/monitoring/_index.md, "Goss format"): OK when every rule
// passes, CRITICAL when one fails, which fails the resource; the rules are
// expanded by the project's own templates first.
var _ = Describe("ccm-agent apply with goss health checks", func() {
	var dir, conf, m string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		conf = filepath.Join(dir, "app.conf")
		m = filepath.Join(dir, "m.yaml")
	})

	write := func(body string) {
		GinkgoHelper()
		Expect(os.WriteFile(m, []byte(body), 0o644)).To(Succeed())
	}

	It("passes rules that hold on the file it wrote and a real command", func() {
		write(`data:
  port: 8080
ccm:
  resources:
    - file:
        - "` + conf + `":
            content: "listen ${ Data.port }\n"
            owner: root
            group: root
            mode: "0640"
            health_checks:
              - name: conf_ok
                goss_rules:
                  file:
                    "` + conf + `":
                      exists: true
                      mode: "0640"
                      contents: ["listen {{ Data.port }}"]
                  command:
                    "grep -c listen ` + conf + `":
                      exit-status: 0
                      stdout: ["1"]
`)
		code, out, errOut := agent("apply", m)
		Expect(code).To(Equal(0), out+errOut)
		Expect(out).To(ContainSubstring("  health conf_ok: OK Count: 5, Failed: 0"))
		Expect(out).To(ContainSubstring("1 resources: 0 stable, 1 changed, 0 failed"))
	})

	It("fails the resource when a rule fails: CRITICAL, exit 2, naming the failed test", func() {
		Expect(os.WriteFile(conf, []byte("listen 80\n"), 0o640)).To(Succeed())
		write(`ccm:
  resources:
    - exec:
        - /bin/true:
            health_checks:
              - goss_rules:
                  file:
                    "` + conf + `":
                      exists: true
                      contents: ["listen 443"]
`)
		code, out, errOut := agent("apply", m, "--json", "--detailed-exit-codes")
		Expect(code).To(Equal(2), out+errOut)
		var rep struct {
			Events []struct {
				Failed       bool     `json:"failed"`
				Errors       []string `json:"error"`
				HealthChecks []struct {
					Name, Status, Message string
					Code                  int
				} `json:"health_checks"`
			} `json:"events"`
		}
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Events).To(HaveLen(1))
		ev := rep.Events[0]
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.HealthChecks).To(HaveLen(1))
		Expect(ev.HealthChecks[0].Name).To(Equal("goss"))
		Expect(ev.HealthChecks[0].Status).To(Equal("CRITICAL"))
		Expect(ev.HealthChecks[0].Code).To(Equal(2))
		Expect(ev.HealthChecks[0].Message).To(HavePrefix("Count: 2, Failed: 1"))
		Expect(ev.HealthChecks[0].Message).To(ContainSubstring("File: " + conf + ": contents"))
		Expect(ev.Errors).To(ContainElement(HavePrefix("health check goss: CRITICAL: Count: 2, Failed: 1")))
	})

	It("redacts goss output of a check that reads sensitive data from every record", func() {
		const canary = "goss-secret-canary-8b21f0"
		write(`data:
  token: ` + canary + `
sensitive_data: [token]
ccm:
  resources:
    - exec:
        - /bin/true:
            health_checks:
              - name: token_check
                goss_rules:
                  command:
                    "echo {{ Data.token }}":
                      exit-status: 0
                      stdout: ["something else"]
`)
		code, out, errOut := agent("apply", m, "--json", "--detailed-exit-codes")
		Expect(code).To(Equal(2), out+errOut)
		Expect(out).To(ContainSubstring(`"status": "CRITICAL"`))
		Expect(out).To(ContainSubstring("[redacted]"))
		Expect(out + errOut).ToNot(ContainSubstring(canary))

		code, out, errOut = agent("apply", m, "--detailed-exit-codes")
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring("CRITICAL"))
		Expect(out + errOut).ToNot(ContainSubstring(canary))
	})

	It("refuses command and goss_rules together, and a format that does not match", func() {
		write(`ccm:
  resources:
    - exec:
        - /bin/true:
            health_checks:
              - command: /bin/true
                goss_rules: {file: {/etc/hostname: {exists: true}}}
`)
		code, _, errOut := agent("apply", m)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("health_checks[0]: command and goss_rules are mutually exclusive"))

		write(`ccm:
  resources:
    - exec:
        - /bin/true:
            health_checks:
              - format: nagios
                goss_rules: {file: {/etc/hostname: {exists: true}}}
`)
		code, _, errOut = agent("apply", m)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("health_checks[0]: format must be goss when using goss_rules"))
	})
})
