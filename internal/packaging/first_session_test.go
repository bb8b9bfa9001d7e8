package packaging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/packaging"
	"github.com/ccm-fleet/ccm/protocol"
)

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start starts a long-running command from the installed package and
// stops it (SIGTERM, then SIGKILL) at the spec's end.
func start(name string, args ...string) *syncBuffer {
	GinkgoHelper()
	out := &syncBuffer{}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	Expect(cmd.Start()).To(Succeed())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	DeferCleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		GinkgoWriter.Printf("--- %s %s\n%s\n", name, strings.Join(args, " "), out.String())
	})
	return out
}

// orch runs the installed ccm-orch and returns its exit code, stdout and
// stderr.
func orch(ctx context.Context, args ...string) (int, string, string) {
	GinkgoHelper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "/usr/bin/ccm-orch", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	return code, stdout.String(), stderr.String()
}

// freePort is a loopback port nothing listens on.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	Expect(l.Close()).To(Succeed())
	return port
}

var _ = Describe("a new operator's first session", Label("real"), func() {
	It("installs the package, configures agent.yaml only, and is told about mistakes before the fleet is", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 20*time.Minute) // building both packages took 8.5 min on 2 busy cores
		defer cancel()
		if reason := installable(ctx); reason != "" {
			Skip(reason)
		}
		work := GinkgoT().TempDir()
		port := freePort()
		url := fmt.Sprintf("nats://127.0.0.1:%d", port)

		By("installing the package")
		deb, _ := buildPackages(ctx)
		install(ctx, deb)

		By("making a signing key and trusting it in the installed policy")
		run(ctx, "/usr/bin/ccm-orch", "keys", "new", "ops", "--dir", work)
		pub, err := os.ReadFile(filepath.Join(work, "ops.pub"))
		Expect(err).NotTo(HaveOccurred())
		policy, err := os.ReadFile(packaging.PolicyConfig)
		Expect(err).NotTo(HaveOccurred())
		const shippedOps = "UBRLBTL735TJP2I4DZA5KM4FAG42AJLMW4TTDWFXPFTTINO272CGWTME"
		Expect(string(policy)).To(ContainSubstring(shippedOps))
		policy = bytes.Replace(policy, []byte(shippedOps), bytes.TrimSpace(pub), 1)
		Expect(os.WriteFile(packaging.PolicyConfig, policy, 0o644)).To(Succeed())
		key := filepath.Join(work, "ops.seed")

		By("writing agent.yaml: the server and the policy, nothing else")
		Expect(os.WriteFile(packaging.AgentConfig, []byte(fmt.Sprintf(
			"identity: first-host\nservers: [%s]\npolicy: %s\n", url, packaging.PolicyConfig)), 0o644)).To(Succeed())

		By("starting the agent before the broker: it waits")
		agentLog := start("/usr/bin/ccm-agent", "run", "--config", packaging.AgentConfig)
		Eventually(agentLog.String).WithTimeout(20 * time.Second).Should(ContainSubstring("NATS not reachable; retrying"))
		Consistently(agentLog.String).WithTimeout(time.Second).ShouldNot(ContainSubstring("level=ERROR"))

		By("starting the broker: the agent connects and serves")
		start("/usr/bin/ccm-orch", "broker", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--store", filepath.Join(work, "broker"))
		Eventually(agentLog.String).WithTimeout(30 * time.Second).Should(ContainSubstring("NATS reachable after retrying"))

		By("finding the agent with ccm-orch discover")
		Eventually(func() string {
			_, out, _ := orch(ctx, "discover", "-s", url)
			return out
		}).WithTimeout(20 * time.Second).Should(ContainSubstring("first-host"))

		By("finding it as a NATS micro service, as nats micro ls does")
		nc, err := nats.Connect(url)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		inbox := nats.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		Expect(err).NotTo(HaveOccurred())
		Expect(nc.PublishRequest("$SRV.PING."+protocol.AgentServiceName, inbox, nil)).To(Succeed())
		msg, err := sub.NextMsg(5 * time.Second)
		Expect(err).NotTo(HaveOccurred())
		var ping struct{ Name, Version, Type string }
		Expect(json.Unmarshal(msg.Data, &ping)).To(Succeed())
		Expect(ping.Type).To(Equal("io.nats.micro.v1.ping_response"))
		Expect(ping.Name).To(Equal(protocol.AgentServiceName))
		Expect(ping.Version).To(Equal(strings.TrimPrefix(testVersion, "v")))

		By("sending an ensure with a typo: exit 1, one line, nothing sent, nothing recorded")
		requests, err := nc.SubscribeSync("ccm.v1.req.>")
		Expect(err).NotTo(HaveOccurred())
		Expect(nc.Flush()).To(Succeed())
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		stream, err := js.Stream(ctx, protocol.HistoryStream)
		Expect(err).NotTo(HaveOccurred())
		info, err := stream.Info(ctx)
		Expect(err).NotTo(HaveOccurred())
		before := info.State.Msgs
		code, out, errOut := orch(ctx, "ensure", "file", "/etc/motd", "--content", "hi", "--owner", "root", "--group", "root",
			"--mode", "0844", "-s", url, "--key", key)
		Expect(code).To(Equal(1), errOut)
		Expect(out).To(BeEmpty())
		Expect(strings.Split(strings.TrimSpace(errOut), "\n")).To(Equal([]string{
			`ccm-orch: file#/etc/motd: invalid resource: property mode: "0844" is not an octal number: invalid digit '8'`}))
		_, err = requests.NextMsg(300 * time.Millisecond)
		Expect(err).To(MatchError(nats.ErrTimeout), "nothing was sent")
		info, err = stream.Info(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State.Msgs).To(Equal(before), "nothing was recorded in history")

		By("starting 100 simulated hosts that trust the same policy")
		start("/usr/bin/ccm-agent", "simulate", "--count", "100", "--vary", "role=web,db,cache", "--policy", packaging.PolicyConfig,
			"--state-dir", filepath.Join(work, "sim"), "-s", url)
		Eventually(func() int {
			_, out, _ := orch(ctx, "discover", "-s", url, "--where", "role=~^(web|db|cache)$")
			return len(strings.Split(strings.TrimSpace(out), "\n"))
		}).WithTimeout(60*time.Second).Should(Equal(100+2), "a header, 100 hosts and the count")

		By("sending an ensure that fails on every one of them with a templated path: a short report")
		path := filepath.Join(work, "missing", "{{ lookup('facts.role') }}", "{{ lookup('facts.identity') }}", "motd")
		code, out, errOut = orch(ctx, "ensure", "file", path, "--content", "hi", "--owner", "root", "--group", "root",
			"--mode", "0644", "--where", "role=~^(web|db|cache)$", "-s", url, "--key", key)
		Expect(code).To(Equal(2), errOut)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		GinkgoWriter.Printf("the report (%d lines):\n%s", len(lines), out)
		Expect(len(lines)).To(BeNumerically("<=", 25), out)
		Expect(out).To(ContainSubstring("100 hosts: file#"))
		Expect(out).To(ContainSubstring("/missing/<facts.role>/<host>/motd"))
		Expect(lines[len(lines)-1]).To(HavePrefix("100 expected, 100 replied: 0 ok, 0 changed, 100 failed, 0 no reply"))
	})
})
