package integration_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

// brokerProcess is a `ccm-orch broker` process on a fixed port and store,
// so it can be killed (SIGKILL: no shutdown of any kind) and started again
// as the same server.
type brokerProcess struct {
	addr, store string
	s           *gexec.Session
}

// startBrokerProcess starts a broker on a free port with a store of its
// own and waits until it has set up the history and the registry.
func startBrokerProcess() *brokerProcess {
	GinkgoHelper()
	p := &brokerProcess{addr: fmt.Sprintf("127.0.0.1:%d", freePorts(1)[0]), store: GinkgoT().TempDir()}
	p.start()
	return p
}

func (p *brokerProcess) url() string { return "nats://" + p.addr }

// start runs the broker and waits until history is ready.
func (p *brokerProcess) start() {
	GinkgoHelper()
	s, err := gexec.Start(exec.Command(orchBin, "broker", "--listen", p.addr, "--store", p.store), GinkgoWriter, GinkgoWriter)
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(func() { s.Interrupt(); Eventually(s).WithTimeout(30 * time.Second).Should(gexec.Exit()) })
	Eventually(s.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(`history stream CCM_HISTORY, node registry CCM_NODES and assignments CCM_ASSIGNMENTS ready`))
	p.s = s
}

// kill ends the broker with SIGKILL and waits for it to be gone.
func (p *brokerProcess) kill() {
	GinkgoHelper()
	p.s.Signal(syscall.SIGKILL)
	Eventually(p.s).WithTimeout(30 * time.Second).Should(gexec.Exit())
}

// hostSources counts a live result's hosts by their source ("" for a live
// reply) and outcome.
func hostSources(doc map[string]any) map[string]int {
	out := map[string]int{}
	hosts, _ := doc["hosts"].([]any)
	for _, h := range hosts {
		m := h.(map[string]any)
		src, _ := m["source"].(string)
		out[fmt.Sprintf("%s/%s", src, m["outcome"])]++
	}
	return out
}

var _ = Describe("A run whose broker is killed and restarted while 200 simulated agents work", Ordered, func() {
	var (
		f   *fleet
		bp  *brokerProcess
		ids []string
	)

	BeforeAll(func() {
		bp = startBrokerProcess()
		f = startFleetWith(fleetOptions{history: true, config: historyAgentConfig, servers: []string{bp.url()}},
			200, "recon", map[string]any{"os": "debian"})
		ids = f.identitiesOf()
	})

	It("accounts every host, from history for the replies lost while the connection was down, and ends before its deadline", func() {
		b := newBlocker()
		// The deadline is far: the run must end because every host is
		// accounted for, not because it passed.
		s := f.start("ensure", "exec", b.command(), "--json", "--reply-timeout", "2m")
		Eventually(b.started).WithTimeout(60 * time.Second).Should(Equal(200))

		bp.kill()
		// The hosts finish while the broker is gone: their replies wait in
		// their connections' reconnect buffers (delivered on reconnect,
		// before ccm-orch has its inbox again) and their history records
		// in their spools.
		b.release()
		Eventually(f.spooled).WithTimeout(60 * time.Second).Should(Equal(200))
		bp.start()

		Eventually(s).WithTimeout(90*time.Second).Should(gexec.Exit(), "ccm-orch must finish well before its 2m reply timeout")
		var live map[string]any
		Expect(json.Unmarshal(s.Out.Contents(), &live)).To(Succeed(), string(s.Err.Contents()))
		sources := hostSources(live)
		Expect(s.ExitCode()).To(Equal(0), "hosts by source/outcome: %v", sources)
		Expect(live["replied"]).To(BeNumerically("==", 200))
		Expect(identities(live, "no_reply")).To(BeEmpty())
		Expect(identities(live, "unexpected")).To(BeEmpty())
		Expect(live["duplicates"]).To(BeNumerically("==", 0))
		Expect(sources["/changed"]+sources["history/changed"]).To(Equal(200), "%v", sources)
		AddReportEntry("hosts by source/outcome", sources)
		Expect(sources["history/changed"]).To(BeNumerically(">", 0), "ccm-orch reconnects after the agents, whose buffered replies reach no inbox")
		Expect(live["summary"]).To(HaveKeyWithValue("from_history", BeNumerically("==", sources["history/changed"])))
		id := live["request_id"].(string)

		Eventually(f.spooled).WithTimeout(30 * time.Second).Should(BeZero())
		Expect(runRecords(f.url, id)).To(Equal(exactlyOnce(id, ids)))
	})
})
