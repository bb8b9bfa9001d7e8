package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

var _ = Describe("ccm-orch interrupted while hosts run", Ordered, func() {
	var (
		bin string
		fl  *fleettest.Fleet
	)
	BeforeAll(func() {
		bin = buildOrch(GinkgoT().TempDir())
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true, Config: agent.Config{HistoryRetry: 100 * time.Millisecond}},
			4, nil, "os=debian,rhel")
	})

	It("says the hosts go on, prints the request id and the history command, exits 130; history then has every host's result", func() {
		dir := GinkgoT().TempDir()
		started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
		Expect(os.Mkdir(started, 0o755)).To(Succeed())
		DeferCleanup(os.WriteFile, release, []byte{}, os.FileMode(0o644)) // no host runs on after a failed spec
		// Each host notes that it started, then runs until the spec
		// releases it: the interrupt lands while every host is running.
		script := filepath.Join(dir, "slow.sh")
		Expect(os.WriteFile(script, []byte("#!/bin/sh\nmktemp \"$1/XXXXXX\" >/dev/null\nwhile [ ! -e \"$2\" ]; do sleep 0.1; done\n"), 0o755)).To(Succeed())

		cmd := exec.Command(bin, "ensure", "exec", script+" "+started+" "+release, "--reply-timeout", "2m", "--server", fl.URL())
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() ([]os.DirEntry, error) { return os.ReadDir(started) }).WithTimeout(fleetTimeout).Should(HaveLen(len(fl.Identities)))

		Expect(s.Command.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(s).WithTimeout(fleetTimeout).Should(gexec.Exit(130))
		errOut := string(s.Err.Contents())
		Expect(errOut).To(ContainSubstring("ccm-orch: interrupted: 4 hosts still running; they will finish and record their results (request "))
		m := regexp.MustCompile(`ccm-orch: see every host's result with: ccm-orch history show ([a-z0-9]{20})\n`).FindStringSubmatch(errOut)
		Expect(m).NotTo(BeNil(), errOut)
		id := m[1]
		out := string(s.Out.Contents())
		Expect(out).NotTo(ContainSubstring("did not reply"))
		Expect(out).To(ContainSubstring("4 hosts still running when interrupted (they go on; their results land in history):\n    sim-0001, sim-0002, sim-0003, sim-0004\n"))
		Expect(out).To(ContainSubstring("0 failed, 0 no reply, 4 still running"))
		Expect(out).To(ContainSubstring("(request " + id + ","))

		// The hosts finish after the orchestrator left, and history has it.
		Expect(os.WriteFile(release, nil, 0o644)).To(Succeed())
		Eventually(func() any {
			code, js, _ := orch("history", "show", id, "--json", "--server", fl.URL())
			if code != 0 {
				return code
			}
			var doc struct {
				Replied int `json:"replied"`
				Summary struct {
					Hosts struct {
						Changed int `json:"changed"`
					} `json:"hosts"`
				} `json:"summary"`
			}
			Expect(json.Unmarshal([]byte(js), &doc)).To(Succeed())
			return doc.Summary.Hosts.Changed
		}).WithTimeout(fleetTimeout).Should(Equal(len(fl.Identities)))
	})
})
