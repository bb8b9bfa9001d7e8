package integration_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/apt/apttest"
)

// nobodyUID is the unprivileged user the adversarial specs act as.
const nobodyUID = 65534

// canary is a unique string a spec plants and then looks for.
func canary(what string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "canary-" + what + "-" + hex.EncodeToString(b[:])
}

// asNobody starts a shell script as uid and gid 65534 in a process group
// of its own and returns the stop that kills the group and waits for it
// (also run when the spec ends).
func asNobody(script string) (stop func()) {
	GinkgoHelper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}, Setpgid: true}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	DeferCleanup(stop)
	return stop
}

// runAsNobody runs a shell script as uid 65534 to its end.
func runAsNobody(script string) {
	GinkgoHelper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	Expect(err).ToNot(HaveOccurred(), string(out))
}

var _ = Describe("Adversarial names and watches (round 3)", func() {
	It("keeps repairing a watched file in a directory a local user owns after that user made a repair fail", func() {
		base, err := os.MkdirTemp("", "ccm-adv-watch-")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(os.RemoveAll, base)
		Expect(os.Chmod(base, 0o755)).To(Succeed())
		owned := filepath.Join(base, "owned")
		Expect(os.Mkdir(owned, 0o755)).To(Succeed())
		Expect(os.Chown(owned, nobodyUID, nobodyUID)).To(Succeed())
		file := filepath.Join(owned, "motd")
		stateDir := filepath.Join(base, "state")

		ops := newSigningKey(base, "ops")
		b, nc, js := assignmentStore()
		fa := &fleetAgent{b: b, identity: "adv-watch-1", stateDir: stateDir, policy: policyFile(base, signerEntry("ops", ops.pub, "file")), facts: map[string]any{}}
		fa.start()
		DeferCleanup(func() { fa.stop() })
		_, err = orchestrator.New(nc).Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "motd", Interval: protocol.Duration(time.Hour),
			Manifest: json.RawMessage(`{"manifest":{"ccm":{"resources":[{"file":[{"` + file + `":{"content":"managed\n","owner":"root","group":"root","mode":"0644","watch":true}}]}]}}}`),
		}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		content := func() string { b, _ := os.ReadFile(file); return string(b) }
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal("managed\n"))

		failedWatchRuns := func() int {
			n := 0
			for _, r := range assignmentRuns(js, fa.identity, "motd") {
				if r.Trigger != protocol.TriggerWatch {
					continue
				}
				for _, ev := range r.Reply.Events {
					if ev.Failed {
						n++
					}
				}
			}
			return n
		}
		flapping := func() int {
			n := 0
			for _, h := range watchRecords(js, fa.identity, "motd") {
				if h.Get(protocol.HeaderFlapping) != "" {
					n++
				}
			}
			return n
		}

		By("the local user flapping the file until repairs are backed off")
		// The file is root's; the directory is the user's, so the user
		// replaces the file rather than writing it.
		stopFlap := asNobody(`while :; do echo fight > ` + file + `.new && mv -f ` + file + `.new ` + file + `; sleep 0.05; done`)
		Eventually(flapping).WithTimeout(60 * time.Second).Should(BeNumerically(">=", 1))
		stopFlap()

		By("the local user making a repair fail: the file's name becomes a directory")
		stopBreak := asNobody(`while :; do rm -f ` + file + ` 2>/dev/null; mkdir -p ` + file + `/keep 2>/dev/null; sleep 0.05; done`)
		Eventually(failedWatchRuns).WithTimeout(60 * time.Second).Should(BeNumerically(">=", 1))
		stopBreak()

		By("a tamper well after the failed repair is still repaired")
		time.Sleep(5 * time.Second)
		tamper := canary("watch")
		runAsNobody(`rm -rf ` + file + ` && echo ` + tamper + ` > ` + file)
		Eventually(content).WithTimeout(60*time.Second).Should(Equal("managed\n"), "the watch is still in force")
		Expect(content()).ToNot(ContainSubstring(tamper))

		By("status showing the failed repairs")
		_, out, _ := runOrch("status", "--json", "--server", b.ClientURL())
		var rep orchestrator.StatusReport
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed(), out)
		Expect(rep.Assignments).To(HaveLen(1))
		Expect(rep.Assignments[0].Hosts).To(HaveLen(1))
		h := rep.Assignments[0].Hosts[0]
		Expect(h.WatchFailures).To(BeNumerically(">=", 1))
		Expect(h.WatchError).ToNot(BeEmpty())
		Expect(h.WatchFailedAt).ToNot(BeZero())

		By("the host's runs, as the dashboard shows them, carrying the failures")
		runs, err := orchestrator.New(nc).HistoryHost(context.Background(), fa.identity, time.Time{}, 0)
		Expect(err).ToNot(HaveOccurred())
		Expect(runs).To(ContainElement(HaveField("WatchFailures", BeNumerically(">=", 1))))
	})

	It("installs nothing but the exact package a glob-scoped signer names, never what apt reads the name as", func(sctx SpecContext) {
		reason, ok := apttest.Available()
		Expect(ok).To(BeTrue(), "%s (make deps installs what apt needs; this spec is never skipped)", reason)
		ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
		defer cancel()
		repo, err := apttest.Setup(ctx, GinkgoT())
		Expect(err).ToNot(HaveOccurred())
		installed := func() []string {
			GinkgoHelper()
			names, err := repo.Installed(ctx)
			Expect(err).ToNot(HaveOccurred())
			return names
		}
		Expect(installed()).To(BeEmpty())

		dir := GinkgoT().TempDir()
		pkgs := newSigningKey(dir, "pkgs")
		sa := &securedAgent{b: brokertest.Start(GinkgoT()), identity: "adv-pkg-1", stateDir: filepath.Join(dir, "state"),
			policy: policyFile(dir, signerEntry("pkgs", pkgs.pub, "package", `package: {names: ["ccm-fleet-testpkg-*"]}`))}
		sa.start()
		DeferCleanup(sa.stopLast)

		// The regex "ccm-fleet-testpkg-." matches the glob; apt would read
		// it as a regex selecting ccm-fleet-testpkg-a, -b and also
		// zz-ccm-fleet-testpkg-x, outside the glob.
		name := "ccm-fleet-testpkg-."
		code, out, errOut := runOrch("ensure", "package", name, "--server", sa.b.ClientURL(), "--key", pkgs.seedFile, "--json", "--reply-timeout", "2m")
		Expect(code).To(Equal(2), "stdout %s\nstderr %s", out, errOut)
		Expect(out).To(ContainSubstring("no such package " + name))
		Expect(installed()).To(BeEmpty(), "nothing was installed")
		for _, n := range repo.Neighbours() {
			Expect(filepath.Join("/usr/share", n, "MARKER")).ToNot(BeAnExistingFile())
		}

		// The scope still lets the signer install a package of exactly a
		// name it matches, and only that package.
		code, out, errOut = runOrch("ensure", "package", "ccm-fleet-testpkg-a", "--server", sa.b.ClientURL(), "--key", pkgs.seedFile, "--json", "--reply-timeout", "2m")
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", out, errOut)
		Expect(installed()).To(Equal([]string{"ccm-fleet-testpkg-a"}))
	})
})
