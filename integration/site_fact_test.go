package integration_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

// One broker, real ccm-agent processes on two sites (and one host of no
// site): the site fact comes from the agent's configuration file, from
// --site on run and on simulate, and ccm-orch selects and reports by it.
var _ = Describe("The site fact with real agents on two sites", Ordered, func() {
	var (
		f      *fleet
		state  string
		ams    *gexec.Session
		nosite *gexec.Session
		fra    = []string{"fra-0001", "fra-0002", "fra-0003", "fra-web1", "fra-web2"}
		amsIDs = []string{"ams-0001", "ams-0002"}
	)
	BeforeAll(func() {
		b := brokertest.Start(GinkgoT())
		f = &fleet{broker: b, url: b.ClientURL()}
		provisionHistory(f.url, 1)
		state = GinkgoT().TempDir()
		bin := ccmAgentBin()
		common := []string{"--server", f.url, "--insecure", "--heartbeat", "1s"}

		config := filepath.Join(state, "fra-web1.yaml")
		Expect(os.WriteFile(config, []byte("identity: fra-web1\nsite: fra1\nstate_dir: "+filepath.Join(state, "fra-web1")+"\n"), 0o600)).To(Succeed())
		startProcess(bin, append([]string{"run", "--config", config}, common...)...)
		startProcess(bin, append([]string{"run", "--identity", "fra-web2", "--site", "fra1", "--state-dir", filepath.Join(state, "fra-web2")}, common...)...)
		startProcess(bin, append([]string{"simulate", "--count", "3", "--identity-prefix", "fra", "--site", "fra1", "--state-dir", filepath.Join(state, "sim-fra")}, common...)...)
		ams = startProcess(bin, append([]string{"simulate", "--count", "2", "--identity-prefix", "ams", "--site", "ams2", "--state-dir", filepath.Join(state, "sim-ams")}, common...)...)
		nosite = startProcess(bin, append([]string{"run", "--identity", "plain-1", "--state-dir", filepath.Join(state, "plain-1")}, common...)...)
		Expect(fleettest.WaitRegistered(f.url, append(append(append([]string{}, fra...), amsIDs...), "plain-1"))).To(Succeed())
	})

	It("selects exactly the hosts of one site with --where site=fra1, and refuses a site that is not one", func() {
		code, out, errOut := f.orch("discover", "--where", "site=fra1", "--discovery", "registry", "--json")
		Expect(code).To(Equal(0), errOut)
		var nodes []struct {
			Identity string         `json:"identity"`
			Facts    map[string]any `json:"facts"`
		}
		Expect(json.Unmarshal([]byte(out), &nodes)).To(Succeed())
		var ids []string
		for _, n := range nodes {
			ids = append(ids, n.Identity)
			Expect(n.Facts).To(HaveKeyWithValue("site", "fra1"), n.Identity)
		}
		Expect(ids).To(Equal(fra))

		code, doc := f.orchJSON("ensure", "exec", "/bin/true", "--where", "site=fra1", "--discovery", "registry", "--timeout", "20s")
		Expect(code).To(Equal(0))
		Expect(doc["expected"]).To(ConsistOf(fra[0], fra[1], fra[2], fra[3], fra[4]))
		Expect(doc["replied"]).To(BeEquivalentTo(len(fra)))
		Expect(doc["no_reply"]).To(BeEmpty())
		Expect(doc).ToNot(HaveKey("no_reply_by_site"), "everyone replied")

		code, out, _ = f.orch("discover", "--where", "site=ams2", "--discovery", "registry")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("ams-0001"))
		Expect(out).To(ContainSubstring("ams-0002"))
		Expect(out).ToNot(ContainSubstring("fra-"))
		Expect(out).ToNot(ContainSubstring("plain-1"))

		bad := startProcess(ccmAgentBin(), "run", "--identity", "bad-1", "--site", "fra.1", "--server", f.url, "--insecure", "--state-dir", filepath.Join(state, "bad-1"))
		Eventually(bad).WithTimeout(30 * time.Second).Should(gexec.Exit(1))
		Expect(string(bad.Err.Contents())).To(ContainSubstring(`site: bad_request: site name "fra.1": character at position 3 is not allowed`))
	})

	It("reports the hosts of a site that went dark as no reply grouped by site, in text and JSON", func() {
		// Killed, the agents cannot remove their registry entries: the
		// registry still expects them, as when a site's link is cut.
		ams.Signal(syscall.SIGKILL)
		nosite.Signal(syscall.SIGKILL)
		Eventually(ams).WithTimeout(30 * time.Second).Should(gexec.Exit())
		Eventually(nosite).WithTimeout(30 * time.Second).Should(gexec.Exit())

		code, out, errOut := f.orch("ensure", "exec", "/bin/true", "--discovery", "registry", "--timeout", "3s")
		Expect(code).To(Equal(3), errOut)
		Expect(out).To(ContainSubstring("3 hosts did not reply (site ams2: 2, (no site): 1):\n    site ams2: ams-0001, ams-0002\n    (no site): plain-1\n"))
		Expect(out).To(ContainSubstring("5 hosts: exec#/bin/true changed\n    fra-0001, fra-0002, fra-0003, fra-web1, fra-web2\n"))
		Expect(out).To(ContainSubstring("8 expected, 5 replied"))

		code, doc := f.orchJSON("ensure", "exec", "/bin/true", "--discovery", "registry", "--timeout", "3s")
		Expect(code).To(Equal(3))
		Expect(doc["no_reply"]).To(Equal([]any{"ams-0001", "ams-0002", "plain-1"}))
		Expect(doc["no_reply_by_site"]).To(Equal([]any{
			map[string]any{"site": "ams2", "count": 2.0, "hosts": []any{"ams-0001", "ams-0002"}},
			map[string]any{"site": "", "count": 1.0, "hosts": []any{"plain-1"}},
		}))
	})
})
