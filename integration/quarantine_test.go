package integration_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
)

// restartLoop runs the real ccm-agent the way a service manager does
// (Restart=always): whenever it exits, it is started again, up to max
// starts. Each start writes the agent's pid to pidFile before anything
// else happens, so a command the agent runs can find it.
type restartLoop struct {
	bin     string
	args    []string
	pidFile string
	max     int
	out     *gbytes.Buffer

	starts atomic.Int32
	exits  atomic.Int32
	mu     sync.Mutex
	cur    *os.Process
	stop   chan struct{}
	done   chan struct{}
}

func startRestartLoop(bin, pidFile string, max int, args ...string) *restartLoop {
	GinkgoHelper()
	l := &restartLoop{bin: bin, args: args, pidFile: pidFile, max: max, out: gbytes.NewBuffer(), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	DeferCleanup(l.close)
	return l
}

func (l *restartLoop) run() {
	defer GinkgoRecover()
	defer close(l.done)
	for int(l.starts.Load()) < l.max {
		cmd := exec.Command(l.bin, l.args...)
		w := gbytesTee{l.out}
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(GinkgoWriter, "restart loop: %v\n", err)
			return
		}
		l.mu.Lock()
		l.cur = cmd.Process
		l.mu.Unlock()
		_ = os.WriteFile(l.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		l.starts.Add(1)
		err := cmd.Wait()
		l.exits.Add(1)
		fmt.Fprintf(GinkgoWriter, "restart loop: agent %d exited: %v\n", cmd.Process.Pid, err)
		select {
		case <-l.stop:
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// signal sends sig to the running agent.
func (l *restartLoop) signal(sig os.Signal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		_ = l.cur.Signal(sig)
	}
}

func (l *restartLoop) close() {
	select {
	case <-l.stop:
		return
	default:
	}
	close(l.stop)
	l.signal(syscall.SIGTERM)
	select {
	case <-l.done:
	case <-time.After(30 * time.Second):
		l.signal(syscall.SIGKILL)
		<-l.done
	}
}

// gbytesTee writes to the buffer and to GinkgoWriter.
type gbytesTee struct{ b *gbytes.Buffer }

func (t gbytesTee) Write(p []byte) (int, error) {
	_, _ = GinkgoWriter.Write(p)
	return t.b.Write(p)
}

// No poison pills: an assignment whose command kills its own agent is run
// at most twice. The real ccm-agent runs in a restart loop; the second
// start after a kill finds the revision was in flight at two consecutive
// stops, quarantines it, stays up, and reports it; a newer revision runs.
var _ = Describe("A poison-pill assignment", Ordered, func() {
	const identity = "poison-1"
	var (
		dir, url, runs, harmless, pidFile string
		ops                               signingKey
		js                                jetstream.JetStream
		loop                              *restartLoop
	)

	lines := func(path string) func() int {
		return func() int {
			b, err := os.ReadFile(path)
			if err != nil {
				return 0
			}
			return strings.Count(string(b), "\n")
		}
	}
	status := func() string {
		_, out, errOut := runOrch("status", "--assignment", "poison", "--server", url)
		return out + errOut
	}
	assign := func(script string) {
		GinkgoHelper()
		doc := fmt.Sprintf("ccm:\n  resources:\n    - exec:\n        - \"/bin/sh %s\": {}\n", script)
		path := filepath.Join(dir, "poison.yaml")
		Expect(os.WriteFile(path, []byte(doc), 0o644)).To(Succeed())
		code, out, errOut := runOrch("assign", "poison", path, "--host", identity, "--interval", "1h", "--key", ops.seedFile, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
	}

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		runs, harmless, pidFile = filepath.Join(dir, "runs.log"), filepath.Join(dir, "harmless.log"), filepath.Join(dir, "agent.pid")
		ops = newSigningKey(dir, "ops")
		policy := policyFile(dir, signerEntry("ops", ops.pub, "exec"))
		b := brokertest.Start(GinkgoT())
		url = b.ClientURL()
		code, _, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)
		nc, err := nats.Connect(url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		loop = startRestartLoop(ccmAgentBin(), pidFile, 6, "-v", "run", "--server", url, "--identity", identity, "--policy", policy,
			"--state-dir", filepath.Join(dir, "state"))
		Eventually(loop.out).WithTimeout(20 * time.Second).Should(gbytes.Say("serving"))
	})

	It("runs a revision that kills its agent at most twice, quarantines it, stays up and reports it in ccm-orch status", func() {
		poison := filepath.Join(dir, "poison.sh")
		Expect(os.WriteFile(poison, fmt.Appendf(nil, "echo run >> %s\nkill -9 \"$(cat %s)\"\nsleep 30\n", runs, pidFile), 0o755)).To(Succeed())
		assign(poison)

		// Killed twice, started a third time: that agent stays up.
		Eventually(loop.exits.Load).WithTimeout(60 * time.Second).Should(BeNumerically(">=", 2))
		Eventually(loop.starts.Load).WithTimeout(20 * time.Second).Should(BeNumerically(">=", 3))
		Eventually(func() string { return string(loop.out.Contents()) }).WithTimeout(20 * time.Second).Should(ContainSubstring("assignment revision quarantined"))
		Consistently(loop.exits.Load).WithTimeout(5*time.Second).Should(Equal(int32(2)), "the agent stays up once the revision is quarantined")
		Expect(lines(runs)()).To(Equal(2), "the poison pill ran exactly twice")

		Eventually(status).WithTimeout(20 * time.Second).Should(MatchRegexp(
			`quarantined: %s: the agent stopped 2 times while applying revision \d+ of assignment poison \(runs started at .+\); it is not run again on this host until a newer revision is assigned`, identity))
		Expect(status()).To(ContainSubstring("1 hosts: 1 quarantined"))
		Eventually(func() []string {
			var out []string
			for _, r := range assignmentRuns(js, identity, "poison") {
				if r.Reply.Error != nil {
					out = append(out, string(r.Reply.Error.Code))
				}
			}
			return out
		}).WithTimeout(20 * time.Second).Should(ContainElement(string(protocol.CodeQuarantined)))
		audit, err := os.ReadFile(filepath.Join(dir, "state", "audit.log"))
		Expect(err).ToNot(HaveOccurred())
		Expect(string(audit)).To(ContainSubstring(`"decision":"quarantined"`))
	})

	It("does not run the quarantined revision again across further restarts", func() {
		for range 2 {
			before := loop.starts.Load()
			loop.signal(syscall.SIGTERM)
			Eventually(loop.starts.Load).WithTimeout(30 * time.Second).Should(Equal(before + 1))
			Eventually(loop.out).WithTimeout(20 * time.Second).Should(gbytes.Say("serving"))
		}
		Consistently(lines(runs)).WithTimeout(5 * time.Second).Should(Equal(2))
		Expect(status()).To(ContainSubstring("1 hosts: 1 quarantined"))
	})

	It("runs a newer revision of the assignment, which clears the quarantine", func() {
		script := filepath.Join(dir, "harmless.sh")
		Expect(os.WriteFile(script, fmt.Appendf(nil, "echo ok >> %s\n", harmless), 0o755)).To(Succeed())
		assign(script)
		Eventually(lines(harmless)).WithTimeout(30 * time.Second).Should(Equal(1))
		Eventually(status).WithTimeout(20 * time.Second).Should(ContainSubstring("1 hosts: 1 converged"))
		Expect(lines(runs)()).To(Equal(2))
		Expect(string(loop.out.Contents())).To(ContainSubstring("assignment quarantine cleared by a newer revision"))
		Expect(loop.exits.Load()).To(Equal(int32(4)), "two kills and two restarts asked for, nothing else")
	})
})

// The same for a manifest source of ccm-agent run: a manifest that kills
// its agent runs at most twice, and runs again once it changes.
var _ = Describe("A poison-pill manifest source", Ordered, func() {
	const identity = "poison-src-1"
	var (
		dir, url, runs, harmless, pidFile, site string
		js                                      jetstream.JetStream
		loop                                    *restartLoop
	)
	lines := func(path string) func() int {
		return func() int {
			b, err := os.ReadFile(path)
			if err != nil {
				return 0
			}
			return strings.Count(string(b), "\n")
		}
	}
	writeSite := func(script string) {
		GinkgoHelper()
		Expect(os.WriteFile(site, fmt.Appendf(nil, "ccm:\n  resources:\n    - exec:\n        - \"/bin/sh %s\": {}\n", script), 0o644)).To(Succeed())
	}

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		runs, harmless, pidFile, site = filepath.Join(dir, "runs.log"), filepath.Join(dir, "harmless.log"), filepath.Join(dir, "agent.pid"), filepath.Join(dir, "site.yaml")
		ops := newSigningKey(dir, "ops")
		policy := policyFile(dir, signerEntry("ops", ops.pub, "exec"))
		b := brokertest.Start(GinkgoT())
		url = b.ClientURL()
		code, _, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)
		nc, err := nats.Connect(url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		poison := filepath.Join(dir, "poison.sh")
		Expect(os.WriteFile(poison, fmt.Appendf(nil, "echo run >> %s\nkill -9 \"$(cat %s)\"\nsleep 30\n", runs, pidFile), 0o755)).To(Succeed())
		writeSite(poison)
		cfg := filepath.Join(dir, "agent.yaml")
		Expect(os.WriteFile(cfg, fmt.Appendf(nil, "sources:\n  interval: 1h\n  manifests: [%s]\n", site), 0o644)).To(Succeed())
		loop = startRestartLoop(ccmAgentBin(), pidFile, 6, "-v", "run", "--config", cfg, "--server", url, "--identity", identity, "--policy", policy,
			"--state-dir", filepath.Join(dir, "state"))
	})

	It("applies a manifest that kills its agent at most twice, quarantines it, stays up and records it in history", func() {
		Eventually(loop.exits.Load).WithTimeout(60 * time.Second).Should(BeNumerically(">=", 2))
		Eventually(loop.starts.Load).WithTimeout(20 * time.Second).Should(BeNumerically(">=", 3))
		Eventually(func() string { return string(loop.out.Contents()) }).WithTimeout(20 * time.Second).Should(ContainSubstring("manifest source quarantined"))
		Consistently(loop.exits.Load).WithTimeout(5*time.Second).Should(Equal(int32(2)), "the agent stays up once the manifest is quarantined")
		Expect(lines(runs)()).To(Equal(2), "the poison pill ran exactly twice")
		Eventually(func() []string {
			var out []string
			for _, r := range sourceRuns(js, identity, site) {
				if r.Reply.Error != nil {
					out = append(out, string(r.Reply.Error.Code)+": "+r.Reply.Error.Message)
				}
			}
			return out
		}).WithTimeout(20 * time.Second).Should(ContainElement(MatchRegexp(
			`^quarantined: the agent stopped 2 times while applying manifest source %s \(sha256 [0-9a-f]{64}; runs started at .+\); it is not run again on this host until the source changes$`, site)))
	})

	It("applies the manifest again once it changed", func() {
		script := filepath.Join(dir, "harmless.sh")
		Expect(os.WriteFile(script, fmt.Appendf(nil, "echo ok >> %s\n", harmless), 0o755)).To(Succeed())
		writeSite(script)
		before := loop.starts.Load()
		loop.signal(syscall.SIGTERM)
		Eventually(loop.starts.Load).WithTimeout(30 * time.Second).Should(Equal(before + 1))
		Eventually(lines(harmless)).WithTimeout(30 * time.Second).Should(Equal(1))
		Expect(lines(runs)()).To(Equal(2))
		Expect(loop.exits.Load()).To(Equal(int32(3)))
	})
})
