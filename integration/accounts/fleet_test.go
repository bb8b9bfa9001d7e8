package accounts_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/internal/accountns"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

// host is one agent: a ccm-agent run process in a mount namespace of its
// own, over its own throw-away /etc, /home, /var/log and /var/mail.
type host struct {
	identity string
	session  *gexec.Session
}

// getent reads an account database as the host's own processes see it.
func (h host) getent(db, key string) string {
	GinkgoHelper()
	out, _ := exec.Command("nsenter", "--mount", "--target", itoa(h.session.Command.Process.Pid), "getent", db, key).Output()
	return strings.TrimSpace(string(out))
}

func itoa(n int) string { return strconv.Itoa(n) }

// startHost starts ccm-agent run as identity with role in its own account
// namespace.
func startHost(url, dir, identity, role string) host {
	GinkgoHelper()
	cmd, cleanup, err := accountns.Command(agentBin, "run", "--insecure", "--identity", identity, "--fact", "role="+role, "--fact", "os=debian",
		"--state-dir", filepath.Join(dir, identity), "--heartbeat", "1s", "--server", url)
	Expect(err).NotTo(HaveOccurred())
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		s.Interrupt().Wait(30 * time.Second)
		s.Kill().Wait(10 * time.Second)
		cleanup()
	})
	return host{identity: identity, session: s}
}

// orch runs ccm-orch --json against url and decodes its result.
func orch(url string, args ...string) (int, map[string]any) {
	GinkgoHelper()
	cmd := exec.Command(orchBin, append(args, "--json")...)
	cmd.Env = append(cmd.Environ(), "CCM_SERVER="+url)
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Eventually(s).WithTimeout(90 * time.Second).Should(gexec.Exit())
	var doc map[string]any
	Expect(json.Unmarshal(s.Out.Contents(), &doc)).To(Succeed(), "stdout %s stderr %s", s.Out.Contents(), s.Err.Contents())
	return s.ExitCode(), doc
}

// doc0 is the request id of a ccm-orch --json result.
func doc0(out string) string {
	GinkgoHelper()
	var doc map[string]any
	Expect(json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &doc)).To(Succeed(), out)
	return doc["request_id"].(string)
}

// listed returns the identities of the hosts whose outcome is outcome
// (changed, ok, failed, ...), sorted.
func listed(doc map[string]any, outcome string) []string {
	var out []string
	list, _ := doc["hosts"].([]any)
	for _, v := range list {
		h, _ := v.(map[string]any)
		if h["outcome"] == outcome {
			out = append(out, h["identity"].(string))
		}
	}
	sort.Strings(out)
	return out
}

var _ = Describe("ccm-orch ensure user on a fleet", Ordered, func() {
	var (
		url      string
		hosts    []host
		stateDir string
	)

	BeforeAll(func() {
		b := brokertest.Start(GinkgoT())
		url = b.ClientURL()
		nc, err := nats.Connect(url)
		Expect(err).NotTo(HaveOccurred())
		defer nc.Close()
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).NotTo(HaveOccurred())
		_, err = jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{})
		Expect(err).NotTo(HaveOccurred())
		stateDir = GinkgoT().TempDir()
		dir := stateDir
		for _, h := range []struct{ id, role string }{{"web1", "web"}, {"web2", "web"}, {"db1", "db"}} {
			hosts = append(hosts, startHost(url, dir, h.id, h.role))
		}
		Expect(fleettest.WaitRegistered(url, []string{"web1", "web2", "db1"})).To(Succeed())
	})

	It("is audited first: a noop names the web hosts that would change and changes nothing", func() {
		code, doc := orch(url, "ensure", "user", "deploy", "--uid", "2001", "--groups", "adm", "--shell", "/bin/bash", "--where", "role=web", "--noop")
		Expect(code).To(Equal(5), "%v", doc)
		Expect(listed(doc, "would_change")).To(Equal([]string{"web1", "web2"}))
		for _, h := range doc["hosts"].([]any) {
			ev := h.(map[string]any)["events"].([]any)[0].(map[string]any)
			Expect(ev["noop_message"]).To(Equal("Would have created the user"))
		}
		for _, h := range hosts {
			Expect(h.getent("passwd", "deploy")).To(BeEmpty(), h.identity)
		}
	})

	It("changes every selected host once, each in its own account files, and is stable after", func() {
		args := []string{"ensure", "user", "deploy", "--uid", "2001", "--groups", "adm", "--shell", "/bin/bash", "--where", "role=web"}
		code, doc := orch(url, args...)
		Expect(code).To(Equal(0), "%v", doc)
		Expect(listed(doc, "changed")).To(Equal([]string{"web1", "web2"}))
		for _, h := range hosts[:2] {
			Expect(h.getent("passwd", "deploy")).To(MatchRegexp(`^deploy:x:2001:\d+::/home/deploy:/bin/bash$`), h.identity)
			Expect(strings.Split(h.getent("group", "adm"), ":")[3]).To(ContainSubstring("deploy"), h.identity)
		}
		Expect(hosts[2].getent("passwd", "deploy")).To(BeEmpty(), "db1 was not selected")
		Expect(getent("passwd", "deploy")).To(BeEmpty(), "the test's own namespace is another host")

		code, doc = orch(url, args...)
		Expect(code).To(Equal(0), "%v", doc)
		Expect(listed(doc, "changed")).To(BeEmpty())
		Expect(listed(doc, "ok")).To(Equal([]string{"web1", "web2"}))
		code, _ = orch(url, append(args, "--noop")...)
		Expect(code).To(Equal(0))
	})

	It("sets a password hash fleet-wide that never leaves the hosts: not in ccm-orch's output nor an agent's audit log", func() {
		hash := "$6$fleetsalt$Qm9vZ2xlZDNoYXNoT2ZOb1BhcnRpY3VsYXJQYXNzd29yZEp1c3RBVGVzdFZhbHVlWXo5"
		cmd := exec.Command(orchBin, "ensure", "user", "deploy", "--where", "role=web", "--json")
		cmd.Env = append(cmd.Environ(), "CCM_SERVER="+url, "CCM_USER_PASSWORD="+hash)
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s).WithTimeout(90 * time.Second).Should(gexec.Exit(0))
		out := string(s.Out.Contents()) + string(s.Err.Contents())
		Expect(out).To(ContainSubstring(`"outcome": "changed"`))
		for _, h := range hosts[:2] {
			Expect(strings.Split(h.getent("shadow", "deploy"), ":")[1]).To(Equal(hash), h.identity)
			audit, err := os.ReadFile(filepath.Join(stateDir, h.identity, "audit.log"))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(audit)).To(ContainSubstring("user#deploy"))
			Expect(string(audit)).NotTo(ContainSubstring("fleetsalt"))
		}
		Expect(out).NotTo(ContainSubstring("fleetsalt"))
		code, doc := orch(url, "history", "show", doc0(out))
		Expect(code).To(Equal(0), "%v", doc)
		raw, err := json.Marshal(doc)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring("user"))
		Expect(string(raw)).NotTo(ContainSubstring("fleetsalt"))
	})

	It("manages a group's members fleet-wide and refuses a uid conflict on the hosts where it holds, changing nothing there", func() {
		code, doc := orch(url, "ensure", "group", "deployers", "--gid", "3001", "--members", "deploy", "--where", "role=web")
		Expect(code).To(Equal(0), "%v", doc)
		Expect(hosts[0].getent("group", "deployers")).To(Equal("deployers:x:3001:deploy"))

		code, doc = orch(url, "ensure", "user", "other", "--uid", "2001", "--where", "role=web")
		Expect(code).To(Equal(2), "%v", doc)
		Expect(listed(doc, "failed")).To(Equal([]string{"web1", "web2"}))
		Expect(hosts[0].getent("passwd", "other")).To(BeEmpty())
		code, doc = orch(url, "ensure", "user", "other", "--uid", "2001", "--where", "role=db")
		Expect(code).To(Equal(0), "%v", doc)
		Expect(hosts[2].getent("passwd", "other")).To(HavePrefix("other:x:2001:"))
	})
})
