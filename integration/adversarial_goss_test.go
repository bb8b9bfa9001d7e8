package integration_test

import (
	"encoding/json"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Round 4: a goss rule reads files, runs commands and queries packages,
// services and ports, none of which the resource catalog can declare, so
// no scope can judge it. A fleet agent refuses a resource carrying goss
// rules before anything runs; only local manifests run them.
var _ = Describe("Adversarial: goss health checks from the fleet (round 4)", Ordered, func() {
	const canary = "goss-canary-5e07c1d9"
	var (
		f                              *fleet
		dir, secret, marker, target, m string
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		secret = filepath.Join(dir, "secret")
		Expect(os.WriteFile(secret, []byte(canary+"\n"), 0o600)).To(Succeed())
		marker = filepath.Join(dir, "goss-ran")
		target = filepath.Join(dir, "motd")
		m = filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(m, []byte(`ccm:
  resources:
    - file:
        - "`+target+`":
            content: "hello\n"
            owner: root
            group: root
            mode: "0644"
            health_checks:
              - name: reads-the-secret
                goss_rules:
                  command:
                    "touch `+marker+`":
                      exit-status: 0
                  file:
                    "`+secret+`":
                      contents: ["nothing like it"]
`), 0o644)).To(Succeed())
		f = startFleetWith(fleetOptions{history: true}, 2, "goss", nil)
	})

	It("refuses a request whose resource carries goss rules on every host, running nothing and leaking nothing", func() {
		code, doc := f.orchJSON("apply", m)
		b, err := json.Marshal(doc)
		Expect(err).ToNot(HaveOccurred())
		GinkgoWriter.Println(string(b))
		Expect(code).To(Equal(2), "%s", b)
		hosts := doc["hosts"].([]any)
		Expect(hosts).To(HaveLen(2))
		for _, h := range hosts {
			Expect(h).To(HaveKeyWithValue("error", HaveKeyWithValue("code", "forbidden")))
			Expect(h).To(HaveKeyWithValue("error", HaveKeyWithValue("message", ContainSubstring(
				"file#"+target+": forbidden: property health_checks[0]: goss health checks are refused here: a goss rule can read any file, run any command and query packages, services, ports and URLs, none of which the resource catalog can declare, so no scope could judge them"))))
		}
		Expect(marker).ToNot(BeAnExistingFile(), "no goss rule ran")
		Expect(target).ToNot(BeAnExistingFile(), "nothing was applied")
		Expect(string(b)).ToNot(ContainSubstring(canary))

		id, _ := doc["request_id"].(string)
		Expect(id).ToNot(BeEmpty(), "%s", b)
		Eventually(func() string {
			_, out, _ := f.orch("history", "show", id, "--json")
			return out
		}).Should(ContainSubstring("goss health checks are refused here"))
		_, out, errOut := f.orch("history", "show", id, "--json")
		Expect(out + errOut).ToNot(ContainSubstring(canary))
	})
})
