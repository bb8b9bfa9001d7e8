package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

var _ = Describe("ccm-orch audit --diff", func() {
	const hosts = 30
	var (
		fl     *fleettest.Fleet
		server []string
		dir    string
		mf     string
		want   = func(id, osName string) string {
			return fmt.Sprintf("Welcome to %s\nrunning %s\nmanaged by ccm\n", id, osName)
		}
	)
	BeforeEach(func() {
		fl = fleettest.Start(GinkgoT(), hosts, nil, "os=debian,rhel")
		server = []string{"--server", fl.URL()}
		dir = GinkgoT().TempDir()
		for i, id := range fl.Identities {
			Expect(os.Mkdir(filepath.Join(dir, id), 0o755)).To(Succeed())
			motd := filepath.Join(dir, id, "motd")
			Expect(os.WriteFile(motd, []byte(want(id, fl.Facts[i]["os"].(string))), 0o644)).To(Succeed())
			Expect(os.Chmod(motd, 0o644)).To(Succeed())
		}
		mf = filepath.Join(GinkgoT().TempDir(), "motd.yaml")
		Expect(os.WriteFile(mf, []byte(`ccm:
  resources:
    - file:
        - "`+dir+`/{{ lookup('facts.identity') }}/motd":
            content: "Welcome to {{ lookup('facts.identity') }}\nrunning {{ lookup('facts.os') }}\nmanaged by ccm\n"
            owner: root
            group: root
            mode: "0644"
`), 0o644)).To(Succeed())
	})

	It("groups 3 tampered hosts of 30 into the 2 ways they drifted, placeholders for identity and facts", func() {
		// sim-0003 (rhel) and sim-0018 (debian) had line 3 edited the same
		// way, their own names and OS elsewhere; sim-0025 had its mode changed.
		for _, id := range []string{"sim-0003", "sim-0018"} {
			i := indexOf(fl.Identities, id)
			content := strings.Replace(want(id, fl.Facts[i]["os"].(string)), "managed by ccm", "hacked by mallory", 1)
			Expect(os.WriteFile(filepath.Join(dir, id, "motd"), []byte(content), 0o644)).To(Succeed())
		}
		Expect(fl.Facts[indexOf(fl.Identities, "sim-0003")]["os"]).NotTo(Equal(fl.Facts[indexOf(fl.Identities, "sim-0018")]["os"]))
		Expect(os.Chmod(filepath.Join(dir, "sim-0025", "motd"), 0o600)).To(Succeed())

		code, out, errOut := orch(append([]string{"audit", mf, "--diff", "--no-progress"}, server...)...)
		Expect(code).To(Equal(5), errOut)
		GinkgoWriter.Println(out)
		Expect(out).To(ContainSubstring("Diffs (2 groups):"))
		Expect(strings.Count(out, " would change on ")).To(Equal(2))
		ref := "file#" + dir + "/<host>/motd"
		Expect(out).To(ContainSubstring("\n" + ref + " would change on 2 hosts: sim-0003, sim-0018\n" +
			"    --- " + dir + "/<host>/motd (current)\n" +
			"    +++ " + dir + "/<host>/motd (desired)\n" +
			"    @@ -1,3 +1,3 @@\n" +
			"     Welcome to <host>\n" +
			"     running <facts.os>\n" +
			"    -hacked by mallory\n" +
			"    +managed by ccm\n"))
		Expect(out).To(ContainSubstring("\n" + ref + " would change on 1 host: sim-0025\n    mode 0600 → 0644\n"))
		Expect(out).NotTo(ContainSubstring("\x1b["), "no colour when not a terminal")

		By("--json carrying each host's diff without --diff")
		code, out, _ = orch(append([]string{"audit", mf, "--json"}, server...)...)
		Expect(code).To(Equal(5))
		var res struct {
			Hosts []struct {
				Identity string
				Events   []struct {
					Diff *struct {
						Content string
						Changes []struct{ Field, From, To string }
					}
				}
			}
		}
		Expect(json.Unmarshal([]byte(out), &res)).To(Succeed())
		Expect(outputSchemas()["result.schema.json"].Validate(instance(out))).To(Succeed(), "the published result schema accepts diffs")
		withDiff := map[string]bool{}
		for _, h := range res.Hosts {
			if h.Events[0].Diff != nil {
				withDiff[h.Identity] = true
			}
		}
		Expect(withDiff).To(Equal(map[string]bool{"sim-0003": true, "sim-0018": true, "sim-0025": true}))
	})

	It("says there is nothing to show when nothing drifted", func() {
		code, out, errOut := orch(append([]string{"audit", mf, "--diff", "--no-progress"}, server...)...)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("No diffs."))
	})
})

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	Fail("no " + s)
	return -1
}

var _ = Describe("ccm-orch history show --diff", func() {
	It("shows what a past audit found, grouped as live", func() {
		fl := fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, 4, nil, "os=debian,rhel")
		server := []string{"--server", fl.URL()}
		dir := GinkgoT().TempDir()
		for _, id := range fl.Identities {
			Expect(os.Mkdir(filepath.Join(dir, id), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, id, "motd"), []byte("old\n"), 0o644)).To(Succeed())
		}
		code, out, errOut := orch(append([]string{"ensure", "file", dir + "/{{ lookup('facts.identity') }}/motd", "--noop", "--json",
			"--content", "on {{ lookup('facts.os') }}\n", "--owner", "root", "--group", "root", "--mode", "0644"}, server...)...)
		Expect(code).To(Equal(5), errOut)
		var res struct {
			RequestID string `json:"request_id"`
		}
		Expect(json.Unmarshal([]byte(out), &res)).To(Succeed())

		Eventually(func() string {
			_, out, _ := orch(append([]string{"history", "show", res.RequestID, "--diff"}, server...)...)
			return out
		}).WithTimeout(10 * time.Second).Should(ContainSubstring("Diffs (1 group):"))
		code, out, _ = orch(append([]string{"history", "show", res.RequestID, "--diff"}, server...)...)
		Expect(code).To(Equal(5))
		Expect(out).To(ContainSubstring("file#" + dir + "/<host>/motd would change on 4 hosts: sim-0001, sim-0002, sim-0003, sim-0004\n" +
			"    --- " + dir + "/<host>/motd (current)\n" +
			"    +++ " + dir + "/<host>/motd (desired)\n" +
			"    @@ -1 +1 @@\n" +
			"    -old\n" +
			"    +on <facts.os>\n"))
	})
})
