package integration_test

import (
	"context"
	"github.com/ccm-fleet/ccm/internal/proctest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// rawExecRequest is a fleet request whose exec properties are the JSON
// text props exactly as given (keys in any case, twice, any bytes), so
// the test sends what an attacker would, not what a Go map can hold.
func rawExecRequest(id, props string) *protocol.FleetRequest {
	req := protocol.NewFleetRequest(id, time.Now(), time.Minute)
	req.Ensure = &protocol.EnsureRequest{Protocol: protocol.EnsureRequestProtocol, Type: protocol.TypeExec, Properties: []byte(props)}
	return req
}

var _ = Describe("What the policy approves is what runs", Ordered, func() {
	const identity = "trust-1"
	var (
		sa      *securedAgent
		nc      *nats.Conn
		ops     signingKey
		dir     string
		subject = protocol.RequestNodeSubject(identity)
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		ops = newSigningKey(dir, "ops")
		// ops may send files and exec, but not through a shell.
		policy := policyFile(dir, signerEntry("ops", ops.pub, "file, exec"))
		b := brokertest.Start(GinkgoT())
		sa = &securedAgent{b: b, identity: identity, stateDir: filepath.Join(dir, "state"), policy: policy}
		sa.start()
		DeferCleanup(sa.stopLast)
		var err error
		nc, err = nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
	})

	// Each request would create its canary if it ran; the shell ones only
	// through /bin/sh (the posix provider runs touch with the literal
	// argument "$(echo", which makes another file).
	DescribeTable("refuses case-variant, duplicate and ill-formed keys as bad_request, running nothing",
		func(id, field, propsFormat string) {
			canary := filepath.Join(dir, "canary-"+id)
			props := strings.ReplaceAll(propsFormat, "CANARY", canary)
			w := signedWire(rawExecRequest(id, props), nc.NewInbox(), &ops)
			r := exchange(nc, subject, w, 10*time.Second)
			Expect(r).ToNot(BeNil(), "a refusal is answered")
			Expect(r.Error).ToNot(BeNil())
			Expect(r.Error.Code).To(Equal(protocol.CodeBadRequest), r.Error.Message)
			Expect(r.Error.Field).To(Equal(field), r.Error.Message)
			Expect(r.Events).To(BeEmpty())
			Consistently(func() []string { m, _ := filepath.Glob(canary + "*"); return m }).WithTimeout(300 * time.Millisecond).Should(BeEmpty())
			Eventually(func() []string {
				var d []string
				for _, rec := range sa.auditOf(id) {
					d = append(d, rec.Decision)
				}
				return d
			}).Should(Equal([]string{string(protocol.CodeBadRequest)}))
		},
		Entry("Provider in another case selects no shell", "provider-case", "ensure.properties.Provider",
			`{"name":"/usr/bin/touch CANARY$(echo)","Provider":"shell"}`),
		Entry("PROVIDER in capitals", "provider-caps", "ensure.properties.PROVIDER",
			`{"name":"/usr/bin/touch CANARY$(echo)","PROVIDER":"shell"}`),
		Entry("provider with a Unicode long s (ſ folds to s)", "provider-fold", "ensure.properties.provider ",
			`{"name":"/usr/bin/touch CANARY$(echo)","provider":"posix","provider ":"x","ſhell":1}`),
		Entry("NAME in capitals", "name-caps", "ensure.properties.NAME",
			`{"NAME":"/usr/bin/touch CANARY"}`),
		Entry("name given twice", "name-twice", "ensure.properties.name",
			`{"name":"/bin/true","name":"/usr/bin/touch CANARY"}`),
		Entry("provider given twice, shell last", "provider-twice", "ensure.properties.provider",
			`{"name":"/usr/bin/touch CANARY$(echo)","provider":"posix","provider":"shell"}`),
		Entry("invalid UTF-8 in the command", "bad-utf8", "ensure.properties.name",
			"{\"name\":\"/usr/bin/touch CANARY\xff\"}"),
	)

	It("runs the exact-key request and names it in the audit line", func() {
		canary := filepath.Join(dir, "canary-exact")
		w := signedWire(rawExecRequest("exact", `{"name":"/usr/bin/touch `+canary+`"}`), nc.NewInbox(), &ops)
		r := exchange(nc, subject, w, 10*time.Second)
		Expect(r).ToNot(BeNil())
		Expect(r.Error).To(BeNil())
		Expect(r.Events).To(HaveLen(1))
		Expect(r.Events[0].Provider).To(Equal("posix"))
		Expect(r.Events[0].Name).To(Equal("/usr/bin/touch " + canary))
		Expect(canary).To(BeAnExistingFile())
		Eventually(func() []string {
			var refs []string
			for _, rec := range sa.auditOf("exact") {
				refs = append(refs, strings.Join(rec.Resources, ","))
			}
			return refs
		}).Should(Equal([]string{"exec#/usr/bin/touch " + canary, "exec#/usr/bin/touch " + canary}))
	})
})

var _ = Describe("An agent killed while a request runs", func() {
	It("records the request as interrupted when it starts again, and answers its replay with that", func() {
		dir := GinkgoT().TempDir()
		ops := newSigningKey(dir, "ops")
		policy := policyFile(dir, signerEntry("ops", ops.pub, "exec"))
		b := brokertest.Start(GinkgoT())
		provisionHistory(b.ClientURL(), 1)
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		const identity = "crash-1"
		state := filepath.Join(dir, "state")
		start := func() *gexec.Session {
			return startProcess(ccmAgentBin(), "-v", "run", "--server", b.ClientURL(), "--identity", identity,
				"--state-dir", state, "--policy", policy, "--heartbeat", "1s")
		}
		agentProc := start()
		Eventually(agentProc.Err).WithTimeout(20 * time.Second).Should(gbytes.Say("serving"))

		// The request writes its pid and sleeps; the agent is killed meanwhile.
		pidFile := filepath.Join(dir, "pid")
		req := protocol.NewFleetRequest("crashme", time.Now(), 10*time.Minute)
		er, err := protocol.NewEnsureRequest(protocol.TypeExec, map[string]any{
			"name": "/bin/sh -c 'echo $$ > " + pidFile + "; exec sleep 60'", "timeout": "90s",
		})
		Expect(err).ToNot(HaveOccurred())
		req.Ensure = er
		w := signedWire(req, nc.NewInbox(), &ops)
		sub, err := nc.SubscribeSync(w.reply)
		Expect(err).ToNot(HaveOccurred())
		Expect(nc.PublishMsg(&nats.Msg{Subject: protocol.RequestNodeSubject(identity), Reply: w.reply, Header: w.header, Data: w.body})).To(Succeed())
		// The shell makes the file before it writes its pid: wait for the pid.
		Eventually(func() string { b, _ := os.ReadFile(pidFile); return strings.TrimSpace(string(b)) }).
			WithTimeout(20 * time.Second).ShouldNot(BeEmpty())
		// Whatever contains exec children, the sleeper must not outlive the spec.
		proctest.KillAfter(pidFile)
		agentProc.Kill()
		Eventually(agentProc).WithTimeout(10 * time.Second).Should(gexec.Exit())
		_, err = sub.NextMsg(200 * time.Millisecond)
		Expect(err).To(HaveOccurred(), "a killed agent sends no reply")

		agentProc = start()
		Eventually(agentProc.Err).WithTimeout(20 * time.Second).Should(gbytes.Say("serving"))
		Eventually(proctest.Running).WithArguments(proctest.PidIn(pidFile)).WithTimeout(10*time.Second).Should(BeFalse(),
			"the command of the killed agent does not run on")

		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		var rec jsstore.Record
		Eventually(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			rec, err = jsstore.Get(ctx, js, protocol.HistorySubject("crashme", identity))
			return err
		}).WithTimeout(20 * time.Second).Should(Succeed())
		reply, err := protocol.DecodeFleetReply(rec.Data, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(reply.Error).ToNot(BeNil())
		Expect(reply.Error.Code).To(Equal(protocol.CodeInterrupted))
		Expect(reply.Error.Message).To(ContainSubstring("the agent stopped before this request finished"))

		dup := exchange(nc, protocol.RequestNodeSubject(identity), w, 10*time.Second)
		Expect(dup).ToNot(BeNil())
		Expect(dup.Error.Code).To(Equal(protocol.CodeDuplicate))
		Expect(dup.Error.Message).To(ContainSubstring("it was answered interrupted"))
	})
})

var _ = Describe("An agent whose facts change", func() {
	It("is targeted by its new facts after SIGHUP: subscriptions and registry entry follow", func() {
		dir := GinkgoT().TempDir()
		b := brokertest.Start(GinkgoT())
		provisionHistory(b.ClientURL(), 1)
		factsFile := filepath.Join(dir, "facts.yaml")
		Expect(os.WriteFile(factsFile, []byte("role: web\n"), 0o600)).To(Succeed())
		agentProc := startProcess(ccmAgentBin(), "-v", "run", "--server", b.ClientURL(), "--identity", "hup-1", "--insecure",
			"--state-dir", filepath.Join(dir, "state"), "--facts-file", factsFile, "--heartbeat", "1s")
		Eventually(agentProc.Err).WithTimeout(20 * time.Second).Should(gbytes.Say("serving"))
		orch := func(args ...string) int {
			code, _, _ := runOrch(append(args, "--server", b.ClientURL())...)
			return code
		}
		Eventually(func() int { return orch("ensure", "exec", "/bin/true", "--where", "role=web") }).WithTimeout(20 * time.Second).Should(Equal(0))
		Expect(orch("ensure", "exec", "/bin/true", "--where", "role=db")).To(Equal(4), "no host is db yet")

		Expect(os.WriteFile(factsFile, []byte("role: db\n"), 0o600)).To(Succeed())
		agentProc.Signal(syscall.SIGHUP)
		Eventually(agentProc.Err).WithTimeout(20 * time.Second).Should(gbytes.Say("SIGHUP: facts gathered again"))
		Eventually(func() int { return orch("ensure", "exec", "/bin/true", "--where", "role=db") }).WithTimeout(20 * time.Second).Should(Equal(0))
		Expect(orch("ensure", "exec", "/bin/true", "--where", "role=web")).To(Equal(4), "no host is web any more")
	})
})
