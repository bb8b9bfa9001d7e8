package integration_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

// freePorts returns n TCP ports free on 127.0.0.1 right now.
func freePorts(n int) []int {
	GinkgoHelper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).ToNot(HaveOccurred())
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		Expect(l.Close()).To(Succeed())
	}
	return ports
}

// startCluster runs three `ccm-orch broker` processes forming one cluster
// and waits until each has set up the history and the registry with 3
// replicas. It returns their sessions and client URLs.
func startCluster() ([]*gexec.Session, []string) {
	ports := freePorts(6)
	var routes, urls []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	var sessions []*gexec.Session
	for i := range 3 {
		cmd := exec.Command(orchBin, "broker", "--name", fmt.Sprintf("n%d", i+1),
			"--listen", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--store", GinkgoT().TempDir(),
			"--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[3+i]), "--routes", strings.Join(routes, ","))
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(func() { s.Interrupt(); Eventually(s).WithTimeout(30 * time.Second).Should(gexec.Exit()) })
		sessions = append(sessions, s)
	}
	for _, s := range sessions {
		Eventually(s.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(`history stream CCM_HISTORY, node registry CCM_NODES and assignments CCM_ASSIGNMENTS ready \(3 replicas\)`))
	}
	return sessions, urls
}

var _ = Describe("A cluster of three brokers", Ordered, func() {
	var (
		f        *fleet
		sessions []*gexec.Session
		ids      []string
	)

	BeforeAll(func() {
		var urls []string
		sessions, urls = startCluster()
		f = startFleetWith(fleetOptions{servers: urls, config: historyAgentConfig}, 60, "cl", map[string]any{"os": "debian"}, "role=web,db")
		ids = f.identitiesOf()
	})

	It("discovers, runs and records as one server does", func() {
		code, out, errOut := f.orch("discover", "--where", "role=db", "--discovery", "registry", "--json")
		Expect(code).To(Equal(0), errOut)
		var nodes []map[string]any
		Expect(json.Unmarshal([]byte(out), &nodes)).To(Succeed())
		Expect(nodes).To(HaveLen(30))

		code, live := f.orchJSON("ensure", "exec", "/bin/true")
		Expect(code).To(Equal(0))
		Expect(live["replied"]).To(BeNumerically("==", 60))
		Expect(live["discovery"]).To(Equal("registry"))
		id := live["request_id"].(string)
		Eventually(func() map[string]uint64 { return runRecords(f.url, id) }).WithTimeout(30 * time.Second).Should(Equal(exactlyOnce(id, ids)))
		code, shown := f.orchJSON("history", "show", id)
		Expect(code).To(Equal(0))
		delete(live, "elapsed")
		delete(shown, "elapsed")
		Expect(shown).To(Equal(live))
	})

	It("keeps exact accounting and one record per host when a server stops in the middle of a run", func() {
		b := newBlocker()
		s := f.start("ensure", "exec", b.command(), "--json", "--reply-timeout", "10m")
		Eventually(b.started).WithTimeout(30 * time.Second).Should(Equal(60))

		// ccm-orch is on the first server; stop the third, which a third
		// of the agents use.
		sessions[2].Interrupt()
		Eventually(sessions[2]).WithTimeout(30 * time.Second).Should(gexec.Exit(0))
		b.release()

		Eventually(s).WithTimeout(120 * time.Second).Should(gexec.Exit(0))
		var live map[string]any
		Expect(json.Unmarshal(s.Out.Contents(), &live)).To(Succeed())
		Expect(live["replied"]).To(BeNumerically("==", 60))
		Expect(identities(live, "no_reply")).To(BeEmpty())
		Expect(identities(live, "unexpected")).To(BeEmpty())
		Expect(live["duplicates"]).To(BeNumerically("==", 0))
		id := live["request_id"].(string)

		Eventually(func() map[string]uint64 { return runRecords(f.url, id) }).WithTimeout(60 * time.Second).Should(Equal(exactlyOnce(id, ids)))
		Eventually(f.spooled).WithTimeout(30 * time.Second).Should(BeZero())
		code, out, _ := f.orch("history", "show", id)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("60 expected, 60 replied: 0 ok, 60 changed, 0 failed, 0 no reply"))
	})
})
