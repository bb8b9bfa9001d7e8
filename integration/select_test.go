package integration_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/auditlog"
	"github.com/ccm-fleet/ccm/protocol"
)

// The compound selection (--select / -S) with the real ccm-orch against
// simulated agents: the orchestrator picks exactly the hosts the
// expression selects, in the registry and by broadcast, and every agent
// judges the expression it receives against its own facts, with the same
// code.
var _ = Describe("--select", Ordered, func() {
	const expr = "(os=debian and role=web) or role=db"
	var f *fleet

	BeforeAll(func() {
		f = startFleetWith(fleetOptions{history: true}, 24, "sel", map[string]any{"dc": "ams"},
			"os=debian,rhel", "role=web,db,cache", "env=dev,prod,test,stage")
	})

	// want computes locally which simulated hosts a filter selects.
	want := func(where []string, sel string) []string {
		flt, err := protocol.NewFilterSelect(where, nil, sel)
		Expect(err).ToNot(HaveOccurred())
		var out []string
		for id, fs := range f.factsOf() {
			if flt.Match(fs) {
				out = append(out, id)
			}
		}
		sort.Strings(out)
		return out
	}

	// touched lists the files in dir.
	touched := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		Expect(err).ToNot(HaveOccurred())
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}

	It("has a fleet where the expression picks some hosts of each kind and leaves others out", func() {
		hosts := want(nil, expr)
		// 24 hosts: os cycles by 2, role by 3, so 4 debian web hosts and 8 db hosts.
		Expect(hosts).To(HaveLen(12))
		Expect(want([]string{"os=debian"}, "")).To(HaveLen(12))
		Expect(hosts).ToNot(Equal(want([]string{"os=debian"}, "")))
	})

	DescribeTable("discover selects exactly the right hosts",
		func(discovery string) {
			code, out, errOut := f.orch("discover", "-S", expr, "--discovery", discovery, "--json")
			Expect(code).To(Equal(0), errOut)
			var nodes []map[string]any
			Expect(json.Unmarshal([]byte(out), &nodes)).To(Succeed())
			var got []string
			for _, n := range nodes {
				got = append(got, n["identity"].(string))
			}
			sort.Strings(got)
			Expect(got).To(Equal(want(nil, expr)))
		},
		Entry("from the node registry", "registry"),
		Entry("by broadcast (each agent judges the discovery's select)", "broadcast"),
	)

	It("runs on exactly the selected hosts and counts them exactly", func() {
		dir := GinkgoT().TempDir()
		code, doc := f.orchJSON("ensure", "exec", "/bin/touch "+filepath.Join(dir, "{{ lookup('facts.identity') }}"), "-S", expr)
		Expect(code).To(Equal(0))
		hosts := want(nil, expr)
		Expect(identities(doc, "expected")).To(Equal(hosts))
		Expect(doc["replied"]).To(BeNumerically("==", len(hosts)))
		Expect(doc["summary"]).To(HaveKeyWithValue("hosts", And(
			HaveKeyWithValue("changed", BeNumerically("==", len(hosts))),
			HaveKeyWithValue("failed", BeNumerically("==", 0)),
			HaveKeyWithValue("no_reply", BeNumerically("==", 0)))))
		Expect(identities(doc, "unexpected")).To(BeEmpty())
		Expect(touched(dir)).To(Equal(hosts), "only the selected hosts ran the command")

		_, out, _ := f.orch("ensure", "exec", "/bin/true", "--select", expr)
		Expect(out).To(ContainSubstring("12 hosts"))
	})

	It("ANDs --where with --select", func() {
		dir := GinkgoT().TempDir()
		code, doc := f.orchJSON("ensure", "exec", "/bin/touch "+filepath.Join(dir, "{{ lookup('facts.identity') }}"), "--select", expr, "--where", "env=prod")
		Expect(code).To(Equal(0))
		hosts := want([]string{"env=prod"}, expr)
		Expect(hosts).ToNot(BeEmpty())
		Expect(len(hosts)).To(BeNumerically("<", len(want(nil, expr))))
		Expect(identities(doc, "expected")).To(Equal(hosts))
		Expect(touched(dir)).To(Equal(hosts))
	})

	It("exits 4 when the expression selects nobody, sending nothing", func() {
		code, _, errOut := f.orch("ensure", "exec", "/bin/true", "-S", "role=web and not (os=debian or os=rhel)")
		Expect(code).To(Equal(4), errOut)
	})

	It("refuses an expression that does not parse before anything is sent, naming the position", func() {
		code, out, errOut := f.orch("ensure", "exec", "/bin/true", "-S", "(os=debian and role=web")
		Expect(code).To(Equal(1))
		Expect(out).To(BeEmpty())
		Expect(errOut).To(ContainSubstring("--select: at 24: expected ')'"))

		code, _, errOut = f.orch("discover", "--select", "")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("--select: at 1: empty expression"))
	})

	Context("sent straight to every agent, without the orchestrator's discovery", func() {
		var nc *nats.Conn
		BeforeAll(func() {
			var err error
			nc, err = nats.Connect(f.url)
			Expect(err).ToNot(HaveOccurred())
			DeferCleanup(nc.Close)
		})

		// decisions waits until every agent's audit log has a line for
		// request id and returns the decisions by identity.
		decisions := func(id string) map[string]string {
			out := map[string]string{}
			Eventually(func() int {
				for ident := range f.factsOf() {
					b, _ := os.ReadFile(filepath.Join(f.stateDir, ident, "audit.log"))
					for _, line := range strings.Split(string(b), "\n") {
						var rec auditlog.Record
						if json.Unmarshal([]byte(line), &rec) == nil && rec.RequestID == id {
							out[ident] = rec.Decision
						}
					}
				}
				return len(out)
			}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(24))
			return out
		}

		// send publishes a fleet request whose filter is the JSON text
		// filter on ccm.v1.req.all.
		send := func(id, filter, dir string) {
			req := rawEnsure(id, "exec", `{"name":"/bin/touch `+filepath.Join(dir, "{{ lookup('facts.identity') }}")+`"}`)
			b, err := json.Marshal(req)
			Expect(err).ToNot(HaveOccurred())
			b = []byte(strings.Replace(string(b), `"filter":null`, `"filter":`+filter, 1))
			Expect(string(b)).To(ContainSubstring(filter))
			Expect(nc.Publish(protocol.RequestSubjectAll, b)).To(Succeed())
			Expect(nc.Flush()).To(Succeed())
		}

		It("each agent runs it when its own facts match the select, and ignores it otherwise", func() {
			dir := GinkgoT().TempDir()
			send("select-judged", `{"select":"`+expr+`"}`, dir)
			got := decisions("select-judged")
			hosts := want(nil, expr)
			for ident, d := range got {
				if slices.Contains(hosts, ident) {
					Expect(d).To(Equal("accepted"), ident)
				} else {
					Expect(d).To(Equal("not_targeted"), ident)
				}
			}
			Eventually(func() []string { return touched(dir) }).WithTimeout(60 * time.Second).Should(Equal(hosts))
		})

		It("each agent refuses a select it cannot parse, and runs nothing", func() {
			dir := GinkgoT().TempDir()
			send("select-broken", `{"select":"(role=db"}`, dir)
			for ident, d := range decisions("select-broken") {
				Expect(d).To(Equal(string(protocol.CodeBadRequest)), ident)
			}
			Expect(touched(dir)).To(BeEmpty())
		})

		It("each agent refuses a filter member it does not know, as an agent older than select refuses select", func() {
			dir := GinkgoT().TempDir()
			send("select-newer", `{"where":[],"choose":"role=db"}`, dir)
			for ident, d := range decisions("select-newer") {
				Expect(d).To(Equal(string(protocol.CodeBadRequest)), ident)
			}
			Expect(touched(dir)).To(BeEmpty())
		})
	})
})
