package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/internal/proctest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// fleetAgent is one in-process agent with its own facts, policy and state
// directory, that can be stopped and started again.
type fleetAgent struct {
	b        *broker.Broker
	identity string
	facts    map[string]any
	stateDir string
	policy   string
	agent    *agent.Agent
	stop     func()
}

func (s *fleetAgent) start() {
	nc, err := nats.Connect(s.b.ClientURL())
	Expect(err).ToNot(HaveOccurred())
	reg, err := providers.Builtin(providers.Options{})
	Expect(err).ToNot(HaveOccurred())
	ready := make(chan struct{})
	a, err := agent.New(agent.Config{Identity: s.identity, StateDir: s.stateDir, Policy: s.policy, ShutdownTimeout: 10 * time.Second, HistoryRetry: 100 * time.Millisecond},
		nc, engine.New(reg, engine.WithHealthRunner(providers.HealthRunner(runner.Exec{}))), s.facts, agent.WithReady(func() { close(ready) }))
	Expect(err).ToNot(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	s.agent = a
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		Eventually(done).WithTimeout(20 * time.Second).Should(Receive(BeNil()))
		nc.Close()
	}
	Eventually(ready).WithTimeout(10 * time.Second).Should(BeClosed())
}

// assignmentRuns reads the history records of identity's runs of the
// assignment name: their revision, trigger and reply.
type assignmentRun struct {
	Revision string
	Trigger  string
	Reply    *protocol.FleetReply
}

func assignmentRuns(js jetstream.JetStream, identity, name string) []assignmentRun {
	var out []assignmentRun
	err := jsstore.Read(context.Background(), js, jsstore.ReadOptions{Filter: protocol.HistorySubjects}, func(r jsstore.Record) error {
		if r.Identity != identity || r.Header.Get(protocol.HeaderAssignment) != name {
			return nil
		}
		reply, err := protocol.DecodeFleetReply(r.Data, protocol.Limits{MaxBytes: 8 << 20})
		if err != nil {
			return err
		}
		out = append(out, assignmentRun{Revision: r.Header.Get(protocol.HeaderAssignmentRevision), Trigger: r.Header.Get(protocol.HeaderTrigger), Reply: reply})
		return nil
	})
	Expect(err).ToNot(HaveOccurred())
	return out
}

func mustFilter(where ...string) *protocol.Filter {
	f, err := protocol.NewFilter(where, nil)
	Expect(err).ToNot(HaveOccurred())
	return f
}

var _ = Describe("Assignments", Ordered, func() {
	var (
		b        *broker.Broker
		dir      string
		target   string
		ops      signingKey
		stranger signingKey
		checker  signingKey
		accounts signingKey
		agents   []*fleetAgent
		client   *orchestrator.Client
		js       jetstream.JetStream
	)

	// writeManifest writes a manifest making <target>/<identity>/motd with
	// text, and returns the parsed bundle as an assignment's manifest.
	bundleOf := func(text string) json.RawMessage {
		doc := fmt.Sprintf(`ccm:
  resources:
    - file:
        - "%s/{{ lookup('facts.identity') }}":
            ensure: directory
            owner: root
            group: root
            mode: "0755"
        - "%s/{{ lookup('facts.identity') }}/motd":
            content: "%s\n"
            owner: root
            group: root
            mode: "0644"
`, target, target, text)
		path := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(path, []byte(doc), 0o644)).To(Succeed())
		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		bundle, err := manifest.NewBundle(m)
		Expect(err).ToNot(HaveOccurred())
		raw, err := json.Marshal(bundle)
		Expect(err).ToNot(HaveOccurred())
		return raw
	}
	motd := func(identity string) string {
		b, err := os.ReadFile(filepath.Join(target, identity, "motd"))
		if err != nil {
			return ""
		}
		return string(b)
	}
	assign := func(name, text string, where []string, key signingKey, interval time.Duration) uint64 {
		flt, err := protocol.NewFilter(where, nil)
		Expect(err).ToNot(HaveOccurred())
		if flt.Empty() {
			flt = nil
		}
		rev, err := client.Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: name, Filter: flt,
			Interval: protocol.Duration(interval), Manifest: bundleOf(text),
		}, key.kp)
		Expect(err).ToNot(HaveOccurred())
		return rev
	}

	// remove stores a removal of name signed by key.
	remove := func(name string, key signingKey) {
		GinkgoHelper()
		_, err := client.RemoveAssignment(context.Background(), name, "test", key.kp)
		Expect(err).ToNot(HaveOccurred())
	}

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		target = filepath.Join(dir, "target")
		ops = newSigningKey(dir, "ops")
		stranger = newSigningKey(dir, "stranger")
		checker = newSigningKey(dir, "checker")
		accounts = newSigningKey(dir, "accounts")
		policy := policyFile(dir, signerEntry("ops", ops.pub, "file"), signerEntry("checker", checker.pub, "file, exec"), signerEntry("accounts", accounts.pub, "user, group"))
		b = brokertest.Start(GinkgoT())
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
		roles := []string{"web", "db", "web", "db"}
		for i, role := range roles {
			fa := &fleetAgent{b: b, identity: fmt.Sprintf("asg-%d", i), stateDir: filepath.Join(dir, fmt.Sprintf("state-%d", i)), policy: policy,
				facts: map[string]any{"os": "debian", "role": role}}
			fa.start()
			DeferCleanup(func() { fa.stop() })
			agents = append(agents, fa)
		}
	})

	It("converges exactly the hosts its selector picks, without any request", func() {
		rev := assign("web", "one", []string{"role=web"}, ops, time.Hour)
		Expect(rev).To(BeNumerically(">", 0))
		Eventually(func() string { return motd("asg-0") }).WithTimeout(20 * time.Second).Should(Equal("one\n"))
		Eventually(func() string { return motd("asg-2") }).WithTimeout(20 * time.Second).Should(Equal("one\n"))
		Eventually(func() []assignmentRun { return assignmentRuns(js, "asg-0", "web") }).Should(ContainElement(And(
			HaveField("Revision", fmt.Sprint(rev)), HaveField("Trigger", protocol.TriggerChange),
			HaveField("Reply.Error", BeNil()), HaveField("Reply.Events", HaveLen(2)))))
		Consistently(func() bool {
			_, err1 := os.Stat(filepath.Join(target, "asg-1"))
			_, err3 := os.Stat(filepath.Join(target, "asg-3"))
			return os.IsNotExist(err1) && os.IsNotExist(err3)
		}).WithTimeout(time.Second).Should(BeTrue(), "the db hosts are not selected")
		// history lists the scheduled run beside pushed ones
		list, err := client.HistoryList(context.Background(), orchestrator.HistoryListOptions{Since: time.Now().Add(-time.Hour), Host: "asg-0", Limit: 100})
		Expect(err).ToNot(HaveOccurred())
		Expect(list).ToNot(BeEmpty())
		// ... and so does the whole listing, without --host: one
		// scheduled run per selected host.
		all, err := client.HistoryList(context.Background(), orchestrator.HistoryListOptions{Since: time.Now().Add(-time.Hour), Limit: 100})
		Expect(err).ToNot(HaveOccurred())
		scheduled := map[string]bool{}
		for _, s := range all {
			if strings.HasPrefix(s.Asked, "assignment web ") {
				scheduled[s.RequestID] = true
			}
		}
		Expect(len(scheduled)).To(BeNumerically(">=", 2), "asg-0's and asg-2's runs: %+v", all)
	})

	It("brings a change of the manifest to the selected hosts within seconds", func() {
		rev := assign("web", "two", []string{"role=web"}, ops, time.Hour)
		Eventually(func() string { return motd("asg-0") }).WithTimeout(20 * time.Second).Should(Equal("two\n"))
		Eventually(func() string { return motd("asg-2") }).WithTimeout(20 * time.Second).Should(Equal("two\n"))
		Eventually(func() []assignmentRun { return assignmentRuns(js, "asg-2", "web") }).Should(ContainElement(HaveField("Revision", fmt.Sprint(rev))))
	})

	It("follows a host whose role changes: picks the assignment up, and drops it", func() {
		db := agents[1]
		db.agent.UpdateFacts(map[string]any{"os": "debian", "role": "web"})
		Eventually(func() string { return motd("asg-1") }).WithTimeout(20 * time.Second).Should(Equal("two\n"))
		Eventually(func() []assignmentRun { return assignmentRuns(js, "asg-1", "web") }).Should(ContainElement(HaveField("Trigger", protocol.TriggerFacts)))

		db.agent.UpdateFacts(map[string]any{"os": "debian", "role": "db"})
		// No longer selected: a new revision does not reach it.
		assign("web", "three", []string{"role=web"}, ops, time.Hour)
		Eventually(func() string { return motd("asg-0") }).WithTimeout(20 * time.Second).Should(Equal("three\n"))
		Consistently(func() string { return motd("asg-1") }).WithTimeout(time.Second).Should(Equal("two\n"))
	})

	It("never applies an assignment signed by a key the policy does not trust, and records the refusal", func() {
		assign("rogue", "rogue", []string{"role=db"}, stranger, time.Hour)
		Eventually(func() []assignmentRun { return assignmentRuns(js, "asg-3", "rogue") }).WithTimeout(20 * time.Second).Should(ContainElement(
			HaveField("Reply.Error.Code", protocol.CodeUnauthenticated)))
		_, err := os.Stat(filepath.Join(target, "asg-3"))
		Expect(os.IsNotExist(err)).To(BeTrue(), "nothing applied")
		Expect(assignmentRuns(js, "asg-3", "rogue")).To(HaveEach(HaveField("Reply.Events", BeEmpty())))
		var refused []agent.AuditRecord
		for _, l := range (&securedAgent{stateDir: agents[3].stateDir}).auditLines() {
			if strings.HasPrefix(l.RequestID, "rogue_") {
				refused = append(refused, l)
			}
		}
		Expect(refused).ToNot(BeEmpty())
		Expect(refused[0].Decision).To(Equal(string(protocol.CodeUnauthenticated)))
		Expect(refused[0].Signer.Key).To(Equal(stranger.pub))
		remove("rogue", stranger)
	})

	It("refuses an older signed revision stored again (a replay), keeping the current one", func() {
		kv, err := js.KeyValue(context.Background(), protocol.AssignmentsBucket)
		Expect(err).ToNot(HaveOccurred())
		first, err := kv.GetRevision(context.Background(), "web", 1)
		Expect(err).ToNot(HaveOccurred())
		rev, err := kv.Put(context.Background(), "web", first.Value())
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() []assignmentRun { return assignmentRuns(js, "asg-0", "web") }).WithTimeout(20 * time.Second).Should(ContainElement(And(
			HaveField("Revision", fmt.Sprint(rev)), HaveField("Reply.Error.Code", protocol.CodeForbidden),
			HaveField("Reply.Error.Message", ContainSubstring("an older revision stored again is not run")))))
		Expect(motd("asg-0")).To(Equal("three\n"), "revision 1 said one")
		assign("web", "three", []string{"role=web"}, ops, time.Hour)
		Eventually(func() string {
			_, out, _ := runOrch("status", "--assignment", "web", "--server", b.ClientURL())
			return out
		}).WithTimeout(20 * time.Second).Should(ContainSubstring("2 hosts: 2 converged"))
	})

	It("refuses both assignments declaring the same resource, applying neither", func() {
		before := motd("asg-0")
		assign("web-copy", "copy", []string{"role=web"}, ops, time.Hour)
		Eventually(func() []assignmentRun { return assignmentRuns(js, "asg-0", "web-copy") }).WithTimeout(20 * time.Second).Should(ContainElement(
			HaveField("Reply.Error.Message", ContainSubstring("is declared by assignments web and web-copy"))))
		Expect(motd("asg-0")).To(Equal(before), "neither applied")
		remove("web-copy", ops)
	})

	It("reports each host's state in ccm-orch status: converged, refused by policy, failed and drift, with their exit codes", func() {
		code, out, errOut := runOrch("status", "--assignment", "web", "--server", b.ClientURL())
		Expect(code).To(Equal(0), out+errOut)
		Expect(out).To(MatchRegexp(`^web r\d+ \(role=web, apply every 1h0m0s\): 2 hosts: 2 converged\n  converged: asg-0, asg-2\n$`))

		// ops may use files only: an exec assignment is refused by policy.
		execRev, err := client.Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "runner", Filter: mustFilter("role=db"), Interval: protocol.Duration(time.Hour),
			Manifest: json.RawMessage(`{"manifest":{"ccm":{"resources":[{"exec":[{"/bin/touch ` + target + `/exec-ran":{}}]}]}}}`),
		}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() int {
			code, _, _ := runOrch("status", "--assignment", "runner", "--server", b.ClientURL())
			return code
		}).WithTimeout(20 * time.Second).Should(Equal(2))
		_, out, _ = runOrch("status", "--assignment", "runner", "--server", b.ClientURL())
		Expect(out).To(ContainSubstring(fmt.Sprintf("runner r%d (role=db, apply every 1h0m0s): 2 hosts: 2 refused", execRev)))
		Expect(out).To(ContainSubstring("refused: asg-1, asg-3: exec#/bin/touch"))
		Expect(out).To(ContainSubstring("not allowed resource type exec"))
		Expect(filepath.Join(target, "exec-ran")).ToNot(BeAnExistingFile())
		remove("runner", ops)

		// A file below a missing directory fails.
		_, err = client.Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "broken", Filter: mustFilter("role=db"), Interval: protocol.Duration(time.Hour),
			Manifest: json.RawMessage(`{"manifest":{"ccm":{"resources":[{"file":[{"` + target + `/missing/dir/f":{"content":"x","owner":"root","group":"root","mode":"0644"}}]}]}}}`),
		}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() string {
			_, out, _ := runOrch("status", "--assignment", "broken", "--server", b.ClientURL())
			return out
		}).WithTimeout(20 * time.Second).Should(ContainSubstring("2 hosts: 2 failed"))
		code, _, _ = runOrch("status", "--assignment", "broken", "--where", "identity=asg-1", "--server", b.ClientURL())
		Expect(code).To(Equal(2))
		remove("broken", ops)

		// A scheduled audit reports drift and changes nothing.
		_, err = client.Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "audit", Filter: mustFilter("role=db"), Interval: protocol.Duration(time.Hour), Noop: true,
			Manifest: json.RawMessage(`{"manifest":{"ccm":{"resources":[{"file":[{"` + target + `/audited":{"content":"x","owner":"root","group":"root","mode":"0644"}}]}]}}}`),
		}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		var rep orchestrator.StatusReport
		Eventually(func() map[string]int {
			code, out, _ := runOrch("status", "--assignment", "audit", "--json", "--server", b.ClientURL())
			if code != 5 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Assignments) != 1 {
				return nil
			}
			return rep.Assignments[0].Counts
		}).WithTimeout(20 * time.Second).Should(Equal(map[string]int{"drift": 2}))
		Expect(rep.Assignments[0].Hosts[0].Drift).To(Equal(1))
		// The run is in history under its own id, rebuilt from the host
		// record alone (an agent writes no request record).
		runID := rep.Assignments[0].Hosts[0].RequestID
		Expect(runID).To(HavePrefix("audit_r"))
		code, out, errOut = runOrch("history", "show", runID, "--json", "--server", b.ClientURL())
		Expect(code).To(Equal(5), errOut)
		var shown map[string]any
		Expect(json.Unmarshal([]byte(out), &shown)).To(Succeed())
		Expect(shown).To(HaveKeyWithValue("request_id", runID))
		code, out, _ = runOrch("history", "list", "--host", "asg-1", "--server", b.ClientURL())
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(runID))
		Expect(filepath.Join(target, "audited")).ToNot(BeAnExistingFile())
		remove("audit", ops)

		// Health checks need exec: ops may not send them; checker may, and
		// a CRITICAL one fails the host.
		healthy := func(name string, key signingKey) {
			_, err := client.Assign(context.Background(), &protocol.Assignment{
				Protocol: protocol.AssignmentProtocol, Name: name, Filter: mustFilter("role=db"), Interval: protocol.Duration(time.Hour),
				Manifest: json.RawMessage(`{"manifest":{"ccm":{"resources":[{"file":[{"` + target + `/` + name + `":{"content":"x","owner":"root","group":"root","mode":"0644",` +
					`"health_checks":[{"name":"web","command":"/bin/sh -c 'echo connection refused; exit 2'"}]}}]}]}}}`),
			}, key.kp)
			Expect(err).ToNot(HaveOccurred())
		}
		healthy("checked-ops", ops)
		Eventually(func() string {
			_, out, _ := runOrch("status", "--assignment", "checked-ops", "--server", b.ClientURL())
			return out
		}).WithTimeout(20 * time.Second).Should(And(ContainSubstring("refused: asg-1, asg-3: "), ContainSubstring(`forbidden: signer ops: denied health_checks "/bin/sh -c 'echo connection refused; exit 2'" by allow [file]: health checks are commands: they need exec in allow`)))
		Expect(filepath.Join(target, "checked-ops")).ToNot(BeAnExistingFile(), "refused before anything was applied")
		remove("checked-ops", ops)

		healthy("checked", checker)
		Eventually(func() string {
			_, out, _ := runOrch("status", "--assignment", "checked", "--server", b.ClientURL())
			return out
		}).WithTimeout(20 * time.Second).Should(ContainSubstring("failed: asg-1, asg-3: file#" + target + "/checked: health check web: CRITICAL: connection refused"))
		code, out, _ = runOrch("status", "--assignment", "checked", "--json", "--server", b.ClientURL())
		Expect(code).To(Equal(2))
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Assignments[0].Hosts[0].Health).To(Equal(map[string]int{"CRITICAL": 1}))
		Expect(filepath.Join(target, "checked")).To(BeAnExistingFile(), "the file applied, its check failed")
		remove("checked", checker)

		// A scheduled run is in history beside pushed requests.
		code, out, _ = runOrch("history", "host", "asg-1", "--server", b.ClientURL())
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("assignment audit"))
	})

	// The account types through an assignment: a scheduled audit names what
	// it would create on the hosts it selects, and creates nothing (the
	// agents here share this machine's account files).
	It("audits a group and a user on the selected hosts as drift, creating neither", func() {
		const grp, usr = "ccm-audit-grp9", "ccm-audit-usr9"
		for _, db := range []string{"group", "passwd"} {
			Expect(exec.Command("getent", db, grp).Run()).To(HaveOccurred(), "%s %s exists on this machine", db, grp)
			Expect(exec.Command("getent", db, usr).Run()).To(HaveOccurred(), "%s %s exists on this machine", db, usr)
		}
		_, err := client.Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "accounts", Filter: mustFilter("role=db"), Interval: protocol.Duration(time.Hour), Noop: true,
			Manifest: json.RawMessage(`{"manifest":{"ccm":{"resources":[{"group":[{"` + grp + `":{"gid":4711}}]},{"user":[{"` + usr + `":{"groups":["` + grp + `"],"shell":"/bin/sh"}}]}]}}}`),
		}, accounts.kp)
		Expect(err).ToNot(HaveOccurred())
		// Each selected host's run, as its audit line and history record
		// keep it: both resources would change, none failed.
		for _, fa := range agents {
			if fa.identity != "asg-1" && fa.identity != "asg-3" {
				continue // role=web: not selected
			}
			var runID string
			Eventually(func() string {
				runID = ""
				data, _ := os.ReadFile(filepath.Join(fa.stateDir, agent.AuditFileName))
				for _, line := range proctest.CompleteLines(data) {
					var rec agent.AuditRecord
					if json.Unmarshal([]byte(line), &rec) == nil && rec.Subject == "$KV."+protocol.AssignmentsBucket+".accounts" && rec.Result != nil {
						Expect(rec.Resources).To(Equal([]string{"group#" + grp, "user#" + usr}))
						Expect([]int{rec.Result.Changed, rec.Result.Failed}).To(Equal([]int{2, 0}), line)
						runID = rec.RequestID
					}
				}
				return runID
			}).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "%s ran the assignment", fa.identity)
			Eventually(func() string {
				_, out, _ := runOrch("history", "show", runID, "--json", "--server", b.ClientURL())
				return out
			}).WithTimeout(20 * time.Second).Should(And(ContainSubstring("Would have created the group"), ContainSubstring("Would have created the user")))
		}
		Expect(exec.Command("getent", "group", grp).Run()).To(HaveOccurred(), "the audit created the group")
		Expect(exec.Command("getent", "passwd", usr).Run()).To(HaveOccurred(), "the audit created the user")
		remove("accounts", accounts)
	})

	It("resumes its schedule after a restart without running again early, and runs every interval", func() {
		a := agents[2]
		count := func() int { return len(assignmentRuns(js, "asg-2", "web")) }
		Eventually(func() string { return motd("asg-2") }).WithTimeout(20 * time.Second).Should(Equal("three\n"))
		Eventually(count).Should(BeNumerically(">=", 3))
		n := count()
		a.stop()
		a.start()
		Consistently(count).WithTimeout(2*time.Second).Should(Equal(n), "the hour has not passed: no run after the restart")

		// A short interval runs again on schedule, and a tamper is repaired
		// by the next run.
		assign("web", "four", []string{"role=web"}, ops, 2*time.Second)
		Eventually(func() string { return motd("asg-2") }).WithTimeout(20 * time.Second).Should(Equal("four\n"))
		Expect(os.WriteFile(filepath.Join(target, "asg-2", "motd"), []byte("tampered\n"), 0o644)).To(Succeed())
		Eventually(func() string { return motd("asg-2") }).WithTimeout(20 * time.Second).Should(Equal("four\n"))
		Eventually(func() []assignmentRun { return assignmentRuns(js, "asg-2", "web") }).Should(ContainElement(HaveField("Trigger", protocol.TriggerSchedule)))
	})

	It("stops applying a removed assignment", func() {
		remove("web", ops)
		// The agent takes the removal (its state file keeps the name's
		// high-water mark, removed) ...
		Eventually(func() string {
			b, _ := os.ReadFile(filepath.Join(agents[0].stateDir, agent.AssignmentStateFileName))
			return string(b)
		}).WithTimeout(10 * time.Second).Should(MatchRegexp(`"web":\{[^}]*"removed":true`))
		// ... and a change it would have repaired every 2s stays.
		Expect(os.WriteFile(filepath.Join(target, "asg-0", "motd"), []byte("mine now\n"), 0o644)).To(Succeed())
		Consistently(func() string { return motd("asg-0") }).WithTimeout(5 * time.Second).Should(Equal("mine now\n"))
	})
})
