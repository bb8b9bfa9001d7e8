package main

import (
	"fmt"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

var _ = Describe("ccm-orch status after an audit", func() {
	It("says drift, as audit does, for a host an audit found drifted after the assignment's last run", func() {
		fl := fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, 2, nil, "role=web")
		server := []string{"--server", fl.URL()}
		dir := GinkgoT().TempDir()
		for _, id := range fl.Identities {
			Expect(os.Mkdir(filepath.Join(dir, id), 0o755)).To(Succeed())
		}
		code, _, errOut := orch("keys", "new", "ops", "--dir", dir)
		Expect(code).To(Equal(0), errOut)
		site := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(site, []byte(`ccm:
  resources:
    - file:
        - `+dir+`/{{ lookup('facts.identity') }}/motd:
            ensure: present
            content: "hello\n"
            owner: root
            group: root
            mode: "0644"
`), 0o644)).To(Succeed())
		code, _, errOut = orch(append([]string{"assign", "web", site, "--where", "role=web", "--interval", "1h", "--key", filepath.Join(dir, "ops.seed")}, server...)...)
		Expect(code).To(Equal(0), errOut)
		Eventually(func() string {
			_, out, _ := orch(append([]string{"status", "--assignment", "web"}, server...)...)
			return out
		}).WithTimeout(fleetTimeout).Should(ContainSubstring("2 hosts: 2 converged"))

		tampered := fl.Identities[0]
		Expect(os.WriteFile(filepath.Join(dir, tampered, "motd"), []byte("hand edited\n"), 0o644)).To(Succeed())
		code, out, errOut := orch(append([]string{"audit", site, "--where", "role=web"}, server...)...)
		Expect(code).To(Equal(5), out+errOut)
		Expect(out).To(ContainSubstring("1 would change"))

		code, out, errOut = orch(append([]string{"status", "--assignment", "web"}, server...)...)
		Expect(code).To(Equal(5), out+errOut)
		Expect(out).To(ContainSubstring("2 hosts: 1 drift, 1 converged"))
		Expect(out).To(MatchRegexp(fmt.Sprintf(`  drift: %s: a later audit \(request [a-z0-9]{20} at \S+\) found 1 of its resources would change\n`, tampered)))
		Expect(out).To(ContainSubstring("  converged: " + fl.Identities[1] + "\n"))
	})
})
