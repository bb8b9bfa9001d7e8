package integration_test

// The standing adversarial suite, rounds 1 and 2: attacks of the earlier
// trust rounds that had no spec against the real binaries, or a spec
// without a canary. Each It is named after its finding and plants a canary
// of its own that must never appear where the attack would put it.
// ADVERSARIAL.md maps every finding to its spec.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/internal/proctest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// realAgent is one `ccm-agent run` process with a policy and a state
// directory of its own; start it again on the same state after a kill.
type realAgent struct {
	url, identity, state, policy, config string
	// env is added to the agent's environment.
	env  []string
	proc *gexec.Session
}

// start runs the agent and waits until it serves; the spec (or container)
// calling it stops the process when it ends.
func (r *realAgent) start() {
	GinkgoHelper()
	args := []string{"-v", "run", "--server", r.url, "--identity", r.identity, "--state-dir", r.state, "--policy", r.policy}
	if r.config != "" {
		args = append(args, "--config", r.config)
	}
	cmd := exec.Command(ccmAgentBin(), args...)
	cmd.Env = append(os.Environ(), r.env...)
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(func() { s.Interrupt().Wait(30 * time.Second); s.Kill().Wait(10 * time.Second) })
	r.proc = s
	Eventually(r.proc.Err).WithTimeout(30 * time.Second).Should(gbytes.Say("serving"))
}

// decisions lists the audit decisions recorded for request id.
func (r *realAgent) decisions(id string) []string {
	var out []string
	for _, rec := range (&securedAgent{stateDir: r.state}).auditOf(id) {
		out = append(out, rec.Decision)
	}
	return out
}

// resigned is w with its body replaced by body and signed again by key, as
// an attacker holding a trusted key sends bytes no encoder would make.
func resigned(w wire, body []byte, key signingKey) wire {
	signer, sig, err := protocol.Sign(body, key.kp)
	Expect(err).ToNot(HaveOccurred())
	h := nats.Header{}
	h.Set(protocol.HeaderSigner, signer)
	h.Set(protocol.HeaderSignature, sig)
	return wire{body: body, header: h, reply: w.reply}
}

// rawEnsure is a fleet request for one resource of type typ whose
// properties are the JSON text props exactly as written.
func rawEnsure(id, typ, props string) *protocol.FleetRequest {
	req := protocol.NewFleetRequest(id, time.Now(), time.Minute)
	req.Ensure = &protocol.EnsureRequest{Protocol: protocol.EnsureRequestProtocol, Type: typ, Properties: []byte(props)}
	return req
}

// attackerCredential runs a process as the unprivileged uid and gid 65534
// (nobody), the local attacker of the swap race.
func attackerCredential() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// canaries lists the files whose names start with prefix.
func canaries(prefix string) []string {
	m, err := filepath.Glob(prefix + "*")
	Expect(err).ToNot(HaveOccurred())
	return m
}

// templateCanary is in the agent's environment and in a root-only file;
// no remote template may read it into a file, reply or audit line.
const templateCanary = "template-secret-canary-5d0b"

var _ = Describe("Adversarial, round 1: a real ccm-agent run", Ordered, func() {
	const identity = "adv-earlier-1"
	var (
		ra           *realAgent
		nc           *nats.Conn
		ops, auditor signingKey
		dir          string
		subject      = protocol.RequestNodeSubject(identity)
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		ops = newSigningKey(dir, "ops")
		auditor = newSigningKey(dir, "auditor")
		policy := policyFile(dir,
			signerEntry("ops", ops.pub, "file, exec"),
			signerEntry("auditor", auditor.pub, "file, exec", "noop_only: true"))
		config := filepath.Join(dir, "agent.yaml")
		// A request cap of 64 KiB, so an oversized request fits the
		// broker's payload limit and reaches the agent.
		Expect(os.WriteFile(config, []byte("max_request_bytes: 65536\n"), 0o600)).To(Succeed())
		b := brokertest.Start(GinkgoT())
		ra = &realAgent{url: b.ClientURL(), identity: identity, state: filepath.Join(dir, "state"), policy: policy, config: config,
			env: []string{"CCM_ADV_SECRET=" + templateCanary}}
		ra.start()
		var err error
		nc, err = nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
	})

	// badRequest sends w, expects bad_request (naming field when given),
	// no event, no file starting with canary, and one bad_request audit
	// line for id.
	badRequest := func(id, canary, field string, w wire) {
		GinkgoHelper()
		r := exchange(nc, subject, w, 20*time.Second)
		Expect(r).ToNot(BeNil(), "a refusal is answered")
		Expect(r.Error).ToNot(BeNil(), "events: %+v", r.Events)
		Expect(r.Error.Code).To(Equal(protocol.CodeBadRequest), r.Error.Message)
		if field != "" {
			Expect(r.Error.Field).To(Equal(field), r.Error.Message)
		}
		Expect(r.Events).To(BeEmpty())
		Consistently(func() []string { return canaries(canary) }).WithTimeout(500 * time.Millisecond).Should(BeEmpty())
		Eventually(func() []string { return ra.decisions(id) }).WithTimeout(10 * time.Second).Should(Equal([]string{string(protocol.CodeBadRequest)}))
	}

	Context("strict decoding, one parse", func() {
		DescribeTable("refuses a key that matches a property only under Unicode case folding, running nothing",
			func(id, field, propsFormat string) {
				canary := filepath.Join(dir, "canary-"+id)
				props := strings.ReplaceAll(propsFormat, "CANARY", canary)
				badRequest(id, canary, field, signedWire(rawEnsure(id, protocol.TypeExec, props), nc.NewInbox(), &ops))
			},
			// encoding/json folds ſ (U+017F) to s and K (U+212A, Kelvin) to k.
			Entry("returns spelled with a long s (ſ)", "fold-long-s", "ensure.properties.returnſ",
				`{"name":"/usr/bin/touch CANARY","returnſ":[0]}`),
			Entry("health_checks spelled with the Kelvin sign (K)", "fold-kelvin", "ensure.properties.health_chec\u212as",
				`{"name":"/bin/true","health_chec`+"\u212a"+`s":[{"command":"/usr/bin/touch CANARY"}]}`),
		)

		It("refuses the request body key ensure spelled with a long s (enſure), running nothing", func() {
			canary := filepath.Join(dir, "canary-fold-envelope")
			w := signedWire(canaryRequest("fold-envelope", canary, time.Now(), time.Minute, nil), nc.NewInbox(), &ops)
			Expect(bytes.Count(w.body, []byte(`"ensure":`))).To(Equal(1))
			body := bytes.Replace(w.body, []byte(`"ensure":`), []byte(`"enſure":`), 1)
			badRequest("fold-envelope", canary, "enſure", resigned(w, body, ops))
		})

		It("refuses a request with its ensure body given twice (a harmless one first), running neither", func() {
			canary := filepath.Join(dir, "canary-dup-ensure")
			w := signedWire(canaryRequest("dup-ensure", canary, time.Now(), time.Minute, nil), nc.NewInbox(), &ops)
			harmless := `"ensure":{"protocol":"` + protocol.EnsureRequestProtocol + `","type":"exec","properties":{"name":"/bin/true"}},"ensure":`
			body := bytes.Replace(w.body, []byte(`"ensure":`), []byte(harmless), 1)
			badRequest("dup-ensure", canary, "ensure", resigned(w, body, ops))
		})

		It("refuses noop given twice (true, then false) from a noop-only signer, running nothing", func() {
			canary := filepath.Join(dir, "canary-dup-noop")
			req := canaryRequest("dup-noop", canary, time.Now(), time.Minute, nil)
			req.Noop = true
			w := signedWire(req, nc.NewInbox(), &auditor)
			Expect(bytes.Count(w.body, []byte(`"noop":true`))).To(Equal(1))
			body := bytes.Replace(w.body, []byte(`"noop":true`), []byte(`"noop":true,"noop":false`), 1)
			badRequest("dup-noop", canary, "noop", resigned(w, body, auditor))
		})

		It("refuses invalid UTF-8 in a file's path, writing the file under no name (mangled or not)", func() {
			canary := filepath.Join(dir, "canary-utf8-path")
			props := fmt.Sprintf(`{"name":"%s-`+"\xff\xfe"+`","content":"utf8-path-canary","owner":"root","group":"root","mode":"0644"}`, canary)
			badRequest("utf8-path", canary, "ensure.properties.name", signedWire(rawEnsure("utf8-path", protocol.TypeFile, props), nc.NewInbox(), &ops))
		})

		It("refuses invalid UTF-8 in a file's content, writing nothing", func() {
			canary := filepath.Join(dir, "canary-utf8-content")
			props := fmt.Sprintf(`{"name":"%s","content":"utf8-content-canary`+"\xc3\x28"+`","owner":"root","group":"root","mode":"0644"}`, canary)
			badRequest("utf8-content", canary, "ensure.properties.content", signedWire(rawEnsure("utf8-content", protocol.TypeFile, props), nc.NewInbox(), &ops))
		})

		DescribeTable("refuses case-variant and duplicate keys inside a manifest body, applying nothing",
			func(id, resource string) {
				canary := filepath.Join(dir, "canary-"+id)
				req := protocol.NewFleetRequest(id, time.Now(), time.Minute)
				req.Manifest = json.RawMessage(`{"manifest":{"ccm":{"resources":[{"exec":[` + strings.ReplaceAll(resource, "CANARY", canary) + `]}]}}}`)
				badRequest(id, canary, "", signedWire(req, nc.NewInbox(), &ops))
			},
			// Through /bin/sh the command makes CANARY; the posix provider
			// would make a file named CANARY$(echo): both start with CANARY.
			Entry("Provider in another case selects no shell", "manifest-provider-case",
				`{"/usr/bin/touch CANARY$(echo)":{"Provider":"shell"}}`),
			Entry("provider given twice, shell last", "manifest-provider-twice",
				`{"/usr/bin/touch CANARY$(echo)":{"provider":"posix","provider":"shell"}}`),
		)

		DescribeTable("gives remote templates facts and data only: environ and file() read nothing of the host",
			func(id, template string) {
				secret := filepath.Join(dir, "secret-"+id)
				Expect(os.WriteFile(secret, []byte(templateCanary), 0o600)).To(Succeed())
				target := filepath.Join(dir, "canary-"+id)
				req := rawEnsure(id, protocol.TypeFile, fmt.Sprintf(`{"name":%q,"content":%q,"owner":"root","group":"root","mode":"0644"}`,
					target, strings.ReplaceAll(template, "SECRET", secret)))
				w := signedWire(req, nc.NewInbox(), &ops)
				sub, err := nc.SubscribeSync(w.reply)
				Expect(err).ToNot(HaveOccurred())
				defer func() { _ = sub.Unsubscribe() }()
				Expect(nc.PublishMsg(&nats.Msg{Subject: subject, Reply: w.reply, Header: w.header, Data: w.body})).To(Succeed())
				m, err := sub.NextMsg(20 * time.Second)
				Expect(err).ToNot(HaveOccurred())
				Expect(string(m.Data)).ToNot(ContainSubstring(templateCanary))
				r, err := protocol.DecodeFleetReply(m.Data, protocol.Limits{})
				Expect(err).ToNot(HaveOccurred())
				Expect(r.Error).ToNot(BeNil(), "events: %+v", r.Events)
				Expect(r.Error.Message).To(ContainSubstring("not available here"))
				Expect(target).ToNot(BeAnExistingFile())
				audit, err := os.ReadFile(filepath.Join(ra.state, agent.AuditFileName))
				Expect(err).ToNot(HaveOccurred())
				Expect(string(audit)).ToNot(ContainSubstring(templateCanary))
			},
			Entry("file() naming a root-only file", "template-file", "{{ file('SECRET') }}"),
			Entry("environ of the agent (its environment holds the canary)", "template-environ", "{{ lookup('environ.CCM_ADV_SECRET') }}"),
		)

		It("refuses properties nested deeper than the depth cap, running nothing", func() {
			canary := filepath.Join(dir, "canary-depth")
			deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
			props := `{"name":"/usr/bin/touch ` + canary + `","environment":` + deep + `}`
			badRequest("depth", canary, "", signedWire(rawEnsure("depth", protocol.TypeExec, props), nc.NewInbox(), &ops))
		})

		It("refuses a request larger than max_request_bytes before running it", func() {
			canary := filepath.Join(dir, "canary-oversize")
			req := canaryRequest("oversize", canary, time.Now(), time.Minute, map[string]any{"environment": []string{"PAD=" + strings.Repeat("x", 70_000)}})
			w := signedWire(req, nc.NewInbox(), &ops)
			Expect(len(w.body)).To(BeNumerically(">", 65536))
			r := exchange(nc, subject, w, 20*time.Second)
			Expect(r).ToNot(BeNil(), "a refusal is answered")
			Expect(r.Error).ToNot(BeNil())
			Expect(r.Error.Code).To(Equal(protocol.CodeBadRequest), r.Error.Message)
			Expect(r.Error.Message).To(ContainSubstring("65536"))
			Expect(r.Events).To(BeEmpty())
			Consistently(func() []string { return canaries(canary) }).WithTimeout(500 * time.Millisecond).Should(BeEmpty())
		})
	})

	It("refuses a file write through a link another user planted in the parent path, leaving the victim as it was", func() {
		Expect(os.Geteuid()).To(BeZero(), "giving the link to another user needs root")
		shared := filepath.Join(dir, "shared")
		Expect(os.Mkdir(shared, 0o1777)).To(Succeed())
		Expect(os.Chmod(shared, 0o1777)).To(Succeed())
		victim := filepath.Join(dir, "victim")
		Expect(os.Mkdir(victim, 0o700)).To(Succeed())
		const precious = "planted-link-canary-2a9d"
		Expect(os.WriteFile(filepath.Join(victim, "shadow"), []byte(precious), 0o600)).To(Succeed())
		planted := filepath.Join(shared, "app")
		Expect(os.Symlink(victim, planted)).To(Succeed())
		Expect(os.Lchown(planted, 65534, 65534)).To(Succeed())

		for i, name := range []string{"shadow", "new"} {
			id := fmt.Sprintf("planted-link-%d", i)
			req := rawEnsure(id, protocol.TypeFile, fmt.Sprintf(`{"name":%q,"content":"evil","owner":"root","group":"root","mode":"0644"}`, filepath.Join(planted, name)))
			r := exchange(nc, subject, signedWire(req, nc.NewInbox(), &ops), 20*time.Second)
			Expect(r).ToNot(BeNil())
			Expect(r.Error).To(BeNil())
			Expect(r.Events).To(HaveLen(1))
			Expect(r.Events[0].Failed).To(BeTrue())
			Expect(strings.Join(r.Events[0].Errors, " ")).To(ContainSubstring("owned by uid 65534"))
		}
		entries, err := os.ReadDir(victim)
		Expect(err).ToNot(HaveOccurred())
		Expect(entries).To(HaveLen(1))
		Expect(os.ReadFile(filepath.Join(victim, "shadow"))).To(Equal([]byte(precious)))
	})

	Context("contained exec", func() {
		// contained sends an exec of script (with its timeout, if any), in
		// which ESCAPEE is a process that writes its pid to a file and, if
		// it were still alive 8 s later, the canary. The event must fail
		// "timed out" when wantFailed, the process must be gone and the
		// canary absent.
		contained := func(id, script string, timeout string, wantFailed bool) {
			GinkgoHelper()
			pidFile := filepath.Join(dir, id+".pid")
			canary := filepath.Join(dir, "canary-"+id)
			proctest.KillAfter(pidFile)
			escapee := `/bin/sh -c "echo \$\$ > ` + pidFile + `; sleep 8; touch ` + canary + `"`
			props := map[string]any{"name": "/bin/sh -c '" + strings.ReplaceAll(script, "ESCAPEE", escapee) + "'"}
			if timeout != "" {
				props["timeout"] = timeout
			}
			er, err := protocol.NewEnsureRequest(protocol.TypeExec, props)
			Expect(err).ToNot(HaveOccurred())
			req := protocol.NewFleetRequest(id, time.Now(), time.Minute)
			req.Ensure = er
			r := exchange(nc, subject, signedWire(req, nc.NewInbox(), &ops), 60*time.Second)
			Expect(r).ToNot(BeNil())
			Expect(r.Error).To(BeNil())
			Expect(r.Events).To(HaveLen(1))
			Expect(r.Events[0].Failed).To(Equal(wantFailed), "errors: %v", r.Events[0].Errors)
			if wantFailed {
				Expect(strings.Join(r.Events[0].Errors, " ")).To(ContainSubstring("timed out"))
			}
			pid := proctest.PidIn(pidFile)
			Eventually(proctest.Running).WithArguments(pid).WithTimeout(15*time.Second).WithPolling(50*time.Millisecond).
				Should(BeFalse(), "process %d escaped the command", pid)
			Expect(canary).ToNot(BeAnExistingFile())
		}

		It("kills a setsid grandchild when the command times out", func() {
			contained("setsid-timeout", "setsid ESCAPEE & sleep 300", "4s", true)
		})

		It("kills a double-forked, setsid grandchild when the command times out", func() {
			contained("double-fork", "(setsid ESCAPEE &); sleep 300", "4s", true)
		})

		It("kills a setsid orphan that cleared its environment (env -i) when the command times out", func() {
			contained("env-i", "(setsid env -i ESCAPEE &); sleep 300", "4s", true)
		})

		It("kills a setsid background process left by a command that ends normally", func() {
			pidFile := filepath.Join(dir, "background.pid")
			contained("background", "setsid ESCAPEE & while [ ! -s "+pidFile+" ]; do sleep 0.05; done; echo started", "", false)
		})

		It("bounds the output it keeps of a command printing 64 MiB, its reply small and its memory bounded", func() {
			const canary = "exec-output-canary-c41d"
			er, err := protocol.NewEnsureRequest(protocol.TypeExec, map[string]any{
				// Long lines: logoutput logs each kept line.
				"name": "/bin/sh -c 'yes " + canary + strings.Repeat("-", 4000) + " | head -c 67108864'", "logoutput": true, "timeout": "120s",
			})
			Expect(err).ToNot(HaveOccurred())
			req := protocol.NewFleetRequest("output-flood", time.Now(), time.Minute)
			req.Ensure = er
			w := signedWire(req, nc.NewInbox(), &ops)
			sub, err := nc.SubscribeSync(w.reply)
			Expect(err).ToNot(HaveOccurred())
			defer func() { _ = sub.Unsubscribe() }()
			Expect(nc.PublishMsg(&nats.Msg{Subject: subject, Reply: w.reply, Header: w.header, Data: w.body})).To(Succeed())
			m, err := sub.NextMsg(120 * time.Second)
			Expect(err).ToNot(HaveOccurred())
			r, err := protocol.DecodeFleetReply(m.Data, protocol.Limits{})
			Expect(err).ToNot(HaveOccurred())
			Expect(r.Error).To(BeNil())
			Expect(r.Events).To(HaveLen(1))
			Expect(r.Events[0].Failed).To(BeFalse(), "errors: %v", r.Events[0].Errors)
			Expect(string(m.Data)).To(ContainSubstring(canary), "the output is kept, bounded")
			rss := peakRSS(ra.proc.Command.Process.Pid)
			GinkgoWriter.Printf("output flood: reply %d bytes, agent peak RSS %d KiB\n", len(m.Data), rss)
			Expect(len(m.Data)).To(BeNumerically("<", 512<<10), "the reply holds a bounded part of 64 MiB")
			Expect(rss).To(BeNumerically("<", 64*1024), "peak RSS (KiB) stays below what holding the output would take")
		})

		// Last in the container: it kills and restarts the agent.
		It("kills what an exec left running when the agent is killed with SIGKILL, by the next start", func() {
			pidFile := filepath.Join(dir, "killed.pid")
			canary := filepath.Join(dir, "canary-agent-killed")
			proctest.KillAfter(pidFile)
			escapee := `/bin/sh -c "echo \$\$ > ` + pidFile + `; sleep 30; touch ` + canary + `"`
			er, err := protocol.NewEnsureRequest(protocol.TypeExec, map[string]any{
				"name": "/bin/sh -c 'setsid " + escapee + " & sleep 300'", "timeout": "90s",
			})
			Expect(err).ToNot(HaveOccurred())
			req := protocol.NewFleetRequest("agent-killed", time.Now(), 5*time.Minute)
			req.Ensure = er
			w := signedWire(req, nc.NewInbox(), &ops)
			Expect(nc.PublishMsg(&nats.Msg{Subject: subject, Reply: w.reply, Header: w.header, Data: w.body})).To(Succeed())
			pid := proctest.PidIn(pidFile)
			ra.proc.Kill()
			Eventually(ra.proc).WithTimeout(10 * time.Second).Should(gexec.Exit())

			ra.start()
			Eventually(proctest.Running).WithArguments(pid).WithTimeout(20*time.Second).WithPolling(50*time.Millisecond).
				Should(BeFalse(), "process %d of the killed agent's exec runs on", pid)
			Expect(canary).ToNot(BeAnExistingFile())
			dup := exchange(nc, subject, w, 20*time.Second)
			Expect(dup).ToNot(BeNil())
			Expect(dup.Error).ToNot(BeNil())
			Expect(dup.Error.Code).To(Equal(protocol.CodeDuplicate))
			Expect(dup.Error.Message).To(ContainSubstring("it was answered interrupted"))
			Expect(canary).ToNot(BeAnExistingFile())
		})
	})
})

// Bounds of the directory swap race against the real agent.
const (
	swapFor      = 3 * time.Second
	swapMax      = 50_000_000
	swapPerBatch = 24
)

var _ = Describe("Adversarial, round 1: a directory swapped for a link by uid 65534 while a real agent writes files", func() {
	It("never writes into the link's root-only target and leaves no temporary file", func() {
		Expect(os.Geteuid()).To(BeZero(), "this attack needs root: the agent writes as root, the swapper runs as uid 65534")
		dir := GinkgoT().TempDir()
		ops := newSigningKey(dir, "ops")
		policy := policyFile(dir, signerEntry("ops", ops.pub, "file"))
		b := brokertest.Start(GinkgoT())
		ra := &realAgent{url: b.ClientURL(), identity: "adv-swap-1", state: filepath.Join(dir, "state"), policy: policy}
		ra.start()
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)

		// goal is what the attacker wants written: root-only, holding a
		// canary that must stay as it is and alone.
		goal := filepath.Join(dir, "goal")
		Expect(os.Mkdir(goal, 0o700)).To(Succeed())
		const shadow = "swap-goal-canary-7f3e"
		Expect(os.WriteFile(filepath.Join(goal, "shadow"), []byte(shadow), 0o600)).To(Succeed())

		// A directory like /tmp that uid 65534 can reach, and the swapper
		// built where it can run it.
		sticky, err := os.MkdirTemp("", "ccm-adv-swap-")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(os.RemoveAll, sticky)
		Expect(os.Chmod(sticky, 0o1777)).To(Succeed())
		binDir := filepath.Join(sticky, "bin")
		Expect(os.Mkdir(binDir, 0o755)).To(Succeed())
		swapper := filepath.Join(binDir, "swapper")
		out, err := exec.Command("go", "build", "-o", swapper, "github.com/ccm-fleet/ccm/integration/testdata/swapper").CombinedOutput()
		Expect(err).ToNot(HaveOccurred(), string(out))

		attacker := filepath.Join(sticky, "attacker")
		cmd := exec.Command(swapper, attacker, goal, swapFor.String(), strconv.Itoa(swapMax))
		cmd.SysProcAttr = attackerCredential()
		cmd.Stderr = GinkgoWriter
		stdout, err := cmd.StdoutPipe()
		Expect(err).ToNot(HaveOccurred())
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := bufio.NewScanner(stdout)
		Expect(lines.Scan()).To(BeTrue())
		Expect(lines.Text()).To(Equal("ready"))
		swapCount := make(chan string, 1)
		go func() {
			defer GinkgoRecover()
			if lines.Scan() {
				swapCount <- lines.Text()
			}
			close(swapCount)
		}()
		name := filepath.Join(attacker, "d")

		// Manifests of swapPerBatch files (every fourth a directory) under
		// the swapped name, one after another, while the swapper runs.
		type written struct {
			base string
			dir  bool
		}
		var (
			changed  []written
			failed   []string
			ensures  int
			requests int
			count    string
		)
		for done := false; !done; {
			select {
			case count = <-swapCount:
				done = true
				continue
			default:
			}
			var entries []string
			var batch []written
			for range swapPerBatch {
				base := fmt.Sprintf("f-%d", ensures)
				path := filepath.Join(name, base)
				isDir := ensures%4 == 3
				if isDir {
					entries = append(entries, fmt.Sprintf(`{%q:{"ensure":"directory","owner":"root","group":"root","mode":"0755"}}`, path))
				} else {
					entries = append(entries, fmt.Sprintf(`{%q:{"content":"written-%s","owner":"root","group":"root","mode":"0644"}}`, path, base))
				}
				batch = append(batch, written{base: base, dir: isDir})
				ensures++
			}
			requests++
			req := protocol.NewFleetRequest(fmt.Sprintf("swap-%05d", requests), time.Now(), time.Minute)
			req.Manifest = json.RawMessage(`{"manifest":{"ccm":{"resources":[{"file":[` + strings.Join(entries, ",") + `]}]}}}`)
			r := exchange(nc, protocol.RequestNodeSubject("adv-swap-1"), signedWire(req, nc.NewInbox(), &ops), 60*time.Second)
			Expect(r).ToNot(BeNil())
			Expect(r.Error).To(BeNil())
			Expect(r.Events).To(HaveLen(swapPerBatch))
			for i, ev := range r.Events {
				if ev.Failed {
					failed = append(failed, strings.Join(ev.Errors, "; "))
				} else {
					changed = append(changed, batch[i])
				}
			}
		}
		Expect(cmd.Wait()).To(Succeed())
		swaps, err := strconv.Atoi(count)
		Expect(err).ToNot(HaveOccurred(), "swap count %q", count)

		realDir := name
		if fi, err := os.Lstat(name); err != nil || !fi.IsDir() {
			realDir = name + ".swap"
		}
		inGoal, err := os.ReadDir(goal)
		Expect(err).ToNot(HaveOccurred())
		inReal, err := os.ReadDir(realDir)
		Expect(err).ToNot(HaveOccurred())
		var goalNames, temps []string
		for _, e := range inGoal {
			goalNames = append(goalNames, e.Name())
		}
		for _, e := range append(inGoal, inReal...) {
			if strings.Contains(e.Name(), ".ccm-") {
				temps = append(temps, e.Name())
			}
		}
		report := fmt.Sprintf("swaps=%d requests=%d ensures=%d changed=%d failed=%d in-goal=%d temps=%d",
			swaps, requests, ensures, len(changed), len(failed), len(goalNames), len(temps))
		GinkgoWriter.Println(report)
		AddReportEntry("directory swap race against ccm-agent run", report)
		if len(failed) > 0 {
			GinkgoWriter.Println("first failure:", failed[0])
		}

		Expect(swaps).To(BeNumerically(">", 0))
		Expect(ensures).To(BeNumerically(">=", 100), "the race covered at least 100 ensures")
		Expect(goalNames).To(Equal([]string{"shadow"}), "writes landed in the root-only directory")
		Expect(os.ReadFile(filepath.Join(goal, "shadow"))).To(Equal([]byte(shadow)))
		Expect(temps).To(BeEmpty(), "temporary files were left behind")
		for _, w := range changed {
			p := filepath.Join(realDir, w.base)
			if w.dir {
				Expect(p).To(BeADirectory())
				continue
			}
			Expect(os.ReadFile(p)).To(Equal([]byte("written-" + w.base)))
		}
	})
})

var _ = Describe("Adversarial, round 2: the dashboard shows hostile text as text", Ordered, func() {
	const script = `<script>alert("dash-xss-canary-41c2")</script>`
	var (
		f    *fleet
		base string
	)

	BeforeAll(func() {
		f = startFleetWith(fleetOptions{history: true}, 2, "adv-ui", map[string]any{"motto": script})
		addr := freeAddr()
		base = "http://" + addr
		ui := f.start("ui", "--listen", addr)
		Eventually(ui.Out).WithTimeout(30 * time.Second).Should(gbytes.Say("CCM Fleet dashboard on"))
	})

	get := func(path string) (*http.Response, string) {
		GinkgoHelper()
		resp, err := http.Get(base + path)
		Expect(err).ToNot(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		Expect(err).ToNot(HaveOccurred())
		return resp, string(body)
	}

	It("escapes a fact holding a script on the host page, under a CSP that runs only the site's scripts", func() {
		var resp *http.Response
		var body string
		Eventually(func() string {
			resp, body = get("/hosts/adv-ui-0001")
			return body
		}).WithTimeout(30 * time.Second).Should(ContainSubstring("dash-xss-canary-41c2"))
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(body).ToNot(ContainSubstring(script))
		Expect(body).ToNot(ContainSubstring(`<script>alert(`))
		Expect(body).To(ContainSubstring(`&lt;script&gt;alert(`))
		Expect(resp.Header.Get("Content-Security-Policy")).To(ContainSubstring("script-src 'self'"))
	})

	It("escapes a resource name holding markup on the run page", func() {
		dir := GinkgoT().TempDir()
		markup := `<img src=x onerror=alert("dash-xss-canary-93ab")>`
		code, doc := f.orchJSON("ensure", "file", filepath.Join(dir, markup), "--content", "x", "--owner", "root", "--group", "root", "--mode", "0644")
		Expect(code).To(Equal(0), "%v", doc)
		id, _ := doc["request_id"].(string)
		Expect(id).ToNot(BeEmpty(), "%v", doc)
		var body string
		Eventually(func() string {
			_, body = get("/runs/" + id)
			return body
		}).WithTimeout(30 * time.Second).Should(ContainSubstring("dash-xss-canary-93ab"))
		Expect(body).ToNot(ContainSubstring(markup))
		Expect(body).ToNot(ContainSubstring(`<img src=x`))
		Expect(body).To(ContainSubstring(`&lt;img src=x onerror=alert(`))
	})
})

var _ = Describe("Adversarial, round 2: a real agent judges assignments by the signer's scopes, as it judges requests", Ordered, func() {
	const identity = "adv-asg-1"
	var (
		dir, state string
		web, db    signingKey
		client     *orchestrator.Client
		js         jetstream.JetStream
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		state = filepath.Join(dir, "state")
		for _, d := range []string{"www", "outside"} {
			Expect(os.Mkdir(filepath.Join(dir, d), 0o755)).To(Succeed())
		}
		web, db = newSigningKey(dir, "web"), newSigningKey(dir, "db")
		policy := policyFile(dir,
			signerEntry("web", web.pub, "file", `file: {paths: ["`+dir+`/www/"]}`),
			signerEntry("db", db.pub, "file", "hosts: [role=db]"))
		facts := filepath.Join(dir, "facts.yaml")
		Expect(os.WriteFile(facts, []byte("role: web\n"), 0o600)).To(Succeed())
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		ctx := context.Background()
		_, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).ToNot(HaveOccurred())
		client = orchestrator.New(nc)
		proc := startProcess(ccmAgentBin(), "-v", "run", "--server", b.ClientURL(), "--identity", identity, "--state-dir", state,
			"--policy", policy, "--facts-file", facts, "--heartbeat", "1s")
		Eventually(proc.Err).WithTimeout(30 * time.Second).Should(gbytes.Say("serving"))
	})

	// assignFile stores, signed by key, an assignment for every host that
	// writes path.
	assignFile := func(name, path string, key signingKey) {
		GinkgoHelper()
		_, err := client.Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: name, Interval: protocol.Duration(time.Hour),
			Manifest: json.RawMessage(fmt.Sprintf(`{"manifest":{"ccm":{"resources":[{"file":[{%q:{"content":"%s\n","owner":"root","group":"root","mode":"0644"}}]}]}}}`, path, name)),
		}, key.kp)
		Expect(err).ToNot(HaveOccurred())
	}
	// refusedRun waits for the host's run of assignment name and expects it
	// forbidden by rule, with an audit line naming the rule (which decision
	// that line records is round 3's to settle).
	refusedRun := func(name, rule string) {
		GinkgoHelper()
		Eventually(func() []assignmentRun { return assignmentRuns(js, identity, name) }).WithTimeout(30 * time.Second).Should(ContainElement(And(
			HaveField("Reply.Error.Code", protocol.CodeForbidden), HaveField("Reply.Error.Message", ContainSubstring(rule)),
			HaveField("Reply.Events", BeEmpty()))))
		var lines []agent.AuditRecord
		for _, l := range (&securedAgent{stateDir: state}).auditLines() {
			if strings.HasPrefix(l.RequestID, name+"_") {
				lines = append(lines, l)
			}
		}
		Expect(lines).To(ContainElement(HaveField("Rule", ContainSubstring(rule))), "an audit line of %s names the rule: %+v", name, lines)
	}

	It("refuses an assignment writing outside the signer's file.paths, writing nothing", func() {
		canary := filepath.Join(dir, "outside", "canary-asg-path")
		assignFile("outside-paths", canary, web)
		refusedRun("outside-paths", "file.paths")
		Expect(canary).ToNot(BeAnExistingFile())
	})

	It("refuses an assignment from a signer whose hosts scope leaves this host out, writing nothing", func() {
		canary := filepath.Join(dir, "www", "canary-asg-host")
		assignFile("other-hosts", canary, db)
		refusedRun("other-hosts", `hosts ["role=db"]`)
		Expect(canary).ToNot(BeAnExistingFile())
	})

	It("applies the same signer's assignment inside its scope (the refusals are the scopes' doing)", func() {
		inside := filepath.Join(dir, "www", "inside")
		assignFile("inside-paths", inside, web)
		Eventually(func() ([]byte, error) { return os.ReadFile(inside) }).WithTimeout(30 * time.Second).Should(Equal([]byte("inside-paths\n")))
	})
})
