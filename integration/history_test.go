package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
)

// historyAgentConfig retries the spool quickly, so tests see it emptied.
var historyAgentConfig = agent.Config{
	HistoryRetry:    100 * time.Millisecond,
	HistoryTimeout:  time.Second,
	ShutdownTimeout: 10 * time.Second,
}

// runRecords counts the history records of request id by subject.
func runRecords(url, id string) map[string]uint64 {
	GinkgoHelper()
	nc, err := nats.Connect(url)
	Expect(err).ToNot(HaveOccurred())
	defer nc.Close()
	js, err := jetstream.New(nc)
	Expect(err).ToNot(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, protocol.HistoryStream)
	Expect(err).ToNot(HaveOccurred())
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(protocol.HistoryRunSubjects(id)))
	Expect(err).ToNot(HaveOccurred())
	return info.State.Subjects
}

// exactlyOnce is what runRecords returns when every host in ids and the
// request have exactly one record.
func exactlyOnce(id string, ids []string) map[string]uint64 {
	want := map[string]uint64{protocol.HistoryRequestSubject(id): 1}
	for _, h := range ids {
		want[protocol.HistorySubject(id, h)] = 1
	}
	return want
}

// spooled counts the records left in the agents' spools.
func (f *fleet) spooled() int {
	n := 0
	for id := range f.factsOf() {
		entries, err := os.ReadDir(filepath.Join(agent.SimulatedStateDir(f.stateDir, id), agent.SpoolDirName))
		if err == nil {
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".json") {
					n++
				}
			}
		}
	}
	return n
}

// resubscribed counts the broker's clients named with prefix (agents,
// with their subscriptions) or named exactly other (a ccm-orch with its
// reply inbox) that have their subscriptions in place.
func (f *fleet) resubscribed(prefix, other string) int {
	n := 0
	for _, c := range f.broker.Clients() {
		switch {
		case strings.HasPrefix(c.Name, prefix) && c.Subscriptions >= 3:
			n++
		case c.Name == other && c.Subscriptions >= 1:
			n++
		}
	}
	return n
}

// describeClients says which of the broker's clients have which number of
// subscriptions, for a failure message.
func (f *fleet) describeClients() string {
	var b strings.Builder
	clients := f.broker.Clients()
	fmt.Fprintf(&b, "%d clients:", len(clients))
	for _, c := range clients {
		fmt.Fprintf(&b, " %s(%d)", c.Name, c.Subscriptions)
	}
	return b.String()
}

// identitiesOf lists the fleet's identities, sorted.
func (f *fleet) identitiesOf() []string {
	var out []string
	for i := range f.count {
		out = append(out, agent.SimulatedIdentity(f.prefix, i))
	}
	return out
}

// blocker is a command the agents run that records that it started and
// waits until the test releases it (or, with only, only those hosts wait).
// The waiting hosts block in flock(1) on a file the test holds locked, so
// hundreds of them cost no CPU while they wait (a loop of sleeps in each
// starved the agents that had yet to start theirs on a loaded machine).
type blocker struct {
	dir  string
	lock *os.File // held with an exclusive flock until release
}

func newBlocker(only ...string) *blocker {
	b := &blocker{dir: GinkgoT().TempDir()}
	Expect(os.Mkdir(filepath.Join(b.dir, "started"), 0o755)).To(Succeed())
	lock, err := os.Create(filepath.Join(b.dir, "lock"))
	Expect(err).ToNot(HaveOccurred())
	Expect(syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)).To(Succeed())
	b.lock = lock
	DeferCleanup(b.release)
	cond := "true"
	if len(only) > 0 {
		cond = fmt.Sprintf(`case " %s " in *" $1 "*) true;; *) false;; esac`, strings.Join(only, " "))
	}
	script := fmt.Sprintf("touch %s/started/$1\nif %s; then\n  /usr/bin/flock -s %s/lock true\nfi\n", b.dir, cond, b.dir)
	Expect(os.WriteFile(filepath.Join(b.dir, "wait.sh"), []byte(script), 0o755)).To(Succeed())
	return b
}

// command is the exec resource name running the blocker.
func (b *blocker) command() string {
	return "/bin/sh " + filepath.Join(b.dir, "wait.sh") + " {{ lookup('facts.identity') }}"
}

// started counts the hosts that started the command.
func (b *blocker) started() int {
	entries, _ := os.ReadDir(filepath.Join(b.dir, "started"))
	return len(entries)
}

// release lets every waiting host finish, and any later one pass at once;
// releasing twice is harmless.
func (b *blocker) release() {
	if b.lock == nil {
		return
	}
	Expect(b.lock.Close()).To(Succeed()) // closing the file drops its lock
	b.lock = nil
}

// asyncID sends an asynchronous ensure of the blocker and returns its id.
func (f *fleet) asyncID(b *blocker) string {
	code, out, errOut := f.orch("ensure", "exec", b.command(), "--async")
	Expect(code).To(Equal(0), errOut)
	id := strings.TrimSpace(out)
	Expect(protocol.ValidateRequestID(id)).To(Succeed())
	return id
}

var _ = Describe("History of a fleet of 100 simulated agents", Ordered, func() {
	var (
		f   *fleet
		ids []string
	)

	BeforeAll(func() {
		f = startFleetWith(fleetOptions{history: true, config: historyAgentConfig}, 100, "hist", map[string]any{"os": "debian"}, "role=web,db")
		ids = f.identitiesOf()
	})

	It("records one ensure as 1 request record and 100 host records, and history show equals the live result", func() {
		dir := GinkgoT().TempDir()
		code, out, errOut := f.orch("ensure", "exec", "/bin/touch "+filepath.Join(dir, "{{ lookup('facts.identity') }}"), "--json")
		Expect(code).To(Equal(0), errOut)
		var live map[string]any
		Expect(json.Unmarshal([]byte(out), &live)).To(Succeed())
		Expect(live["replied"]).To(BeNumerically("==", 100))
		Expect(live["discovery"]).To(Equal("registry"))
		id := live["request_id"].(string)

		Eventually(func() map[string]uint64 { return runRecords(f.url, id) }).
			WithTimeout(30 * time.Second).Should(Equal(exactlyOnce(id, ids)))

		code, out, errOut = f.orch("history", "show", id, "--json")
		Expect(code).To(Equal(0), errOut)
		var shown map[string]any
		Expect(json.Unmarshal([]byte(out), &shown)).To(Succeed())
		delete(live, "elapsed")
		delete(shown, "elapsed")
		Expect(shown).To(Equal(live))

		code, out, _ = f.orch("history", "show", id)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("100 hosts: exec#/bin/touch "))
		Expect(out).To(ContainSubstring("100 expected, 100 replied: 0 ok, 100 changed, 0 failed, 0 no reply"))

		code, out, _ = f.orch("history", "list", "--json")
		Expect(code).To(Equal(0))
		var list []map[string]any
		Expect(json.Unmarshal([]byte(out), &list)).To(Succeed())
		Expect(list[0]).To(HaveKeyWithValue("request_id", id))
		Expect(list[0]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("changed", BeNumerically("==", 100))))

		code, out, _ = f.orch("history", "host", "hist-0042")
		Expect(code).To(Equal(0))
		Expect(out).To(MatchRegexp(`(?m)^\S+ \S+\s+` + id + `\s+ensure exec#/bin/touch .*changed`))
	})

	It("keeps exactly one record per host when the broker restarts in the middle of a run", func() {
		b := newBlocker()
		id := f.asyncID(b)
		Eventually(b.started).WithTimeout(30 * time.Second).Should(Equal(100))

		restarted := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			restarted <- f.broker.Restart(ctx)
		}()
		b.release() // the hosts finish while the broker goes down and comes back
		Eventually(restarted).WithTimeout(40 * time.Second).Should(Receive(BeNil()))

		Eventually(func() map[string]uint64 { return runRecords(f.url, id) }).
			WithTimeout(60 * time.Second).Should(Equal(exactlyOnce(id, ids)))
		Eventually(f.spooled).WithTimeout(30 * time.Second).Should(BeZero())

		code, out, _ := f.orch("history", "show", id)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("100 expected, 100 replied: 0 ok, 100 changed"))
	})

	It("spools replies while JetStream is disabled and records each exactly once when it is back", func() {
		b := newBlocker()
		// The deadline is far: the run ends when the 100 hosts have replied,
		// and a slow machine must not turn the wait below into no replies.
		s := f.start("ensure", "exec", b.command(), "--json", "--reply-timeout", "10m")
		Eventually(b.started).WithTimeout(30 * time.Second).Should(Equal(100))
		restart := func(js bool) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			Expect(f.broker.RestartJetStream(ctx, js)).To(Succeed())
		}
		restart(false)
		enabled := false
		DeferCleanup(func() {
			if !enabled {
				restart(true)
			}
		})
		// Every agent and the waiting ccm-orch are back, subscribed, before
		// the hosts finish (a reply sent before the inbox is subscribed
		// again would be lost, as core NATS does).
		Eventually(func() int { return f.resubscribed("hist-", "ccm-orch") }).WithTimeout(60*time.Second).
			Should(Equal(101), f.describeClients)
		b.release()

		Eventually(s).WithTimeout(120 * time.Second).Should(gexec.Exit(0))
		var live map[string]any
		Expect(json.Unmarshal(s.Out.Contents(), &live)).To(Succeed())
		Expect(live["replied"]).To(BeNumerically("==", 100), "agents reply without JetStream")
		id := live["request_id"].(string)
		Eventually(f.spooled).WithTimeout(30 * time.Second).Should(Equal(100))

		restart(true)
		enabled = true
		Eventually(f.spooled).WithTimeout(30 * time.Second).Should(BeZero())
		Expect(runRecords(f.url, id)).To(Equal(exactlyOnce(id, ids)))

		code, out, errOut := f.orch("history", "show", id, "--json")
		Expect(code).To(Equal(0), errOut)
		var shown map[string]any
		Expect(json.Unmarshal([]byte(out), &shown)).To(Succeed())
		delete(live, "elapsed")
		delete(shown, "elapsed")
		Expect(shown).To(Equal(live))
	})

	It("shows a reply that came after the deadline as late in history show", func() {
		b := newBlocker("hist-0003")
		code, out, _ := f.orch("ensure", "exec", b.command(), "--host", "hist-0001", "--host", "hist-0002", "--host", "hist-0003",
			"--reply-timeout", "1s", "--json")
		Expect(code).To(Equal(3))
		var live map[string]any
		Expect(json.Unmarshal([]byte(out), &live)).To(Succeed())
		Expect(identities(live, "no_reply")).To(Equal([]string{"hist-0003"}))
		id := live["request_id"].(string)
		b.release()

		Eventually(func() map[string]uint64 { return runRecords(f.url, id) }).
			WithTimeout(30 * time.Second).Should(Equal(exactlyOnce(id, []string{"hist-0001", "hist-0002", "hist-0003"})))
		code, out, _ = f.orch("history", "show", id)
		Expect(code).To(Equal(0), "the late reply counts")
		Expect(out).To(ContainSubstring("3 hosts: exec#/bin/sh "))
		Expect(out).To(ContainSubstring("1 host replied after the deadline:\n    hist-0003\n"))
		Expect(out).To(ContainSubstring("3 expected, 3 replied: 0 ok, 3 changed, 0 failed, 0 no reply"))

		code, out, _ = f.orch("history", "show", id, "--json")
		Expect(code).To(Equal(0))
		var shown map[string]any
		Expect(json.Unmarshal([]byte(out), &shown)).To(Succeed())
		Expect(identities(shown, "late_hosts")).To(Equal([]string{"hist-0003"}))
		Expect(shown["late"]).To(BeNumerically("==", 1))

		code, out, _ = f.orch("history", "host", "hist-0003")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("changed (late)"))
	})

	It("lists a run a host never answered in that host's timeline, as no_reply", func() {
		code, out, _ := f.orch("ensure", "exec", "/bin/true", "--host", "hist-0001", "--host", "gone-host-9", "--reply-timeout", "1s", "--json")
		Expect(code).To(Equal(3))
		var live map[string]any
		Expect(json.Unmarshal([]byte(out), &live)).To(Succeed())
		Expect(identities(live, "no_reply")).To(Equal([]string{"gone-host-9"}))
		id := live["request_id"].(string)

		var entries []map[string]any
		Eventually(func() []map[string]any {
			code, out, _ := f.orch("history", "host", "gone-host-9", "--json")
			entries = nil
			if code != 0 || json.Unmarshal([]byte(out), &entries) != nil {
				return nil
			}
			return entries
		}).WithTimeout(20 * time.Second).Should(ContainElement(And(HaveKeyWithValue("request_id", id), HaveKeyWithValue("outcome", "no_reply"))))
		code, out, _ = f.orch("history", "host", "gone-host-9")
		Expect(code).To(Equal(0))
		Expect(out).To(MatchRegexp(id + `\s+ensure exec#/bin/true\s+no_reply`))

		code, out, _ = f.orch("history", "host", "hist-0001", "--json")
		Expect(code).To(Equal(0))
		Expect(json.Unmarshal([]byte(out), &entries)).To(Succeed())
		Expect(entries).To(ContainElement(And(HaveKeyWithValue("request_id", id), Not(HaveKeyWithValue("outcome", "no_reply")))), "the host that answered has its answer")
	})
})
