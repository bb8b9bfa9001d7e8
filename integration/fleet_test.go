package integration_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

func identities(doc map[string]any, key string) []string {
	var out []string
	list, _ := doc[key].([]any)
	for _, v := range list {
		out = append(out, v.(string))
	}
	sort.Strings(out)
	return out
}

var _ = Describe("A fleet of 50 simulated agents", Ordered, func() {
	var f *fleet

	BeforeAll(func() {
		f = startFleet(50, "node", map[string]any{"dc": "ams"},
			"os=debian,rhel", "role=web.frontend,db primary,cache", "cpus=2,4,8,16,32")
	})

	// expect computes locally which simulated hosts a filter selects.
	expect := func(terms ...string) []string {
		flt, err := protocol.ParseFilter(terms)
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

	DescribeTable("--where with each operator selects exactly the right hosts",
		func(terms ...string) {
			want := expect(terms...)
			args := []string{"discover"}
			for _, t := range terms {
				args = append(args, "--where", t)
			}
			code, out, errOut := f.orch(append(args, "--json")...)
			if len(want) == 0 {
				Expect(code).To(Equal(4), errOut)
				return
			}
			Expect(code).To(Equal(0), errOut)
			var nodes []map[string]any
			Expect(json.Unmarshal([]byte(out), &nodes)).To(Succeed())
			var got []string
			for _, n := range nodes {
				got = append(got, n["identity"].(string))
			}
			sort.Strings(got)
			Expect(got).To(Equal(want))
		},
		Entry("=", "os=debian"),
		Entry("!=", "os!=debian"),
		Entry("=~", "role=~^web"),
		Entry("!~", "role!~^web"),
		Entry("<", "cpus<8"),
		Entry("<=", "cpus<=8"),
		Entry(">", "cpus>8"),
		Entry(">=", "cpus>=16"),
		Entry("ANDed terms", "os=rhel", "cpus>=8", "role!=cache"),
		Entry("a value with a dot", "role=web.frontend"),
		Entry("a value with a space", "role=db primary"),
		Entry("nothing matches", "os=plan9"),
	)

	DescribeTable("requests reach exactly the selected hosts on the narrowest subject",
		func(args []string, want func() []string) {
			dir := GinkgoT().TempDir()
			code, doc := f.orchJSON(append([]string{"ensure", "exec", "/bin/touch " + filepath.Join(dir, "{{ lookup('facts.identity') }}")}, args...)...)
			Expect(code).To(Equal(0))
			hosts := want()
			Expect(identities(doc, "expected")).To(Equal(hosts))
			Expect(doc["replied"]).To(BeNumerically("==", len(hosts)))
			entries, err := os.ReadDir(dir)
			Expect(err).ToNot(HaveOccurred())
			var touched []string
			for _, e := range entries {
				touched = append(touched, e.Name())
			}
			Expect(touched).To(Equal(hosts), "only selected hosts ran the command")
		},
		Entry("a fact subject (role=db primary)", []string{"--where", "role=db primary"}, func() []string { return expect("role=db primary") }),
		Entry("a fact subject with a dot (role=web.frontend)", []string{"--where", "role=web.frontend"}, func() []string { return expect("role=web.frontend") }),
		Entry("node subjects (--host)", []string{"--host", "node-0003", "--host", "node-0042"}, func() []string { return []string{"node-0003", "node-0042"} }),
		Entry("all (no equality on a subject fact)", []string{"--where", "cpus>=16"}, func() []string { return expect("cpus>=16") }),
	)

	It("changes a templated file on every host, then is stable, then finds drift under noop", func() {
		dir := GinkgoT().TempDir()
		for id := range f.factsOf() {
			Expect(os.Mkdir(filepath.Join(dir, id), 0o755)).To(Succeed())
		}
		path := filepath.Join(dir, "{{ lookup('facts.identity') }}", "motd")
		args := []string{"ensure", "file", path, "--content", "hi {{ lookup('facts.role') }}", "--owner", "root", "--group", "root", "--mode", "0644"}
		code, doc := f.orchJSON(args...)
		Expect(code).To(Equal(0))
		Expect(doc["summary"]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("changed", BeNumerically("==", 50))))

		code, doc = f.orchJSON(args...)
		Expect(code).To(Equal(0))
		Expect(doc["summary"]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("ok", BeNumerically("==", 50))))

		Expect(os.WriteFile(filepath.Join(dir, "node-0007", "motd"), []byte("tampered"), 0o644)).To(Succeed())
		code, out, _ := f.orch(append(args, "--noop")...)
		Expect(code).To(Equal(5))
		Expect(out).To(ContainSubstring("49 hosts"))
		Expect(out).To(ContainSubstring("node-0007"))
		Expect(os.ReadFile(filepath.Join(dir, "node-0007", "motd"))).To(Equal([]byte("tampered")))
	})

	It("exits 2 when a resource fails", func() {
		code, doc := f.orchJSON("ensure", "exec", "/bin/false", "--where", "os=rhel")
		Expect(code).To(Equal(2))
		Expect(doc["summary"]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("failed", BeNumerically("==", len(expect("os=rhel"))))))
	})

	It("exits 4 when nothing matches, sending nothing", func() {
		code, _, _ := f.orch("ensure", "exec", "/bin/true", "--where", "os=plan9")
		Expect(code).To(Equal(4))
	})

	It("refuses a filter that cannot parse before sending anything", func() {
		code, out, errOut := f.orch("ensure", "exec", "/bin/true", "--where", "os=~[")
		Expect(code).To(Equal(1))
		Expect(out).To(BeEmpty())
		Expect(errOut).To(ContainSubstring("os=~["))
	})

	It("stops sending batches after --max-failures and reports hosts never asked", func() {
		code, doc := f.orchJSON("ensure", "exec", "/bin/false", "--where", "os=debian", "--batch", "5", "--max-failures", "1")
		Expect(code).To(Equal(2))
		notAsked := identities(doc, "not_asked")
		Expect(notAsked).ToNot(BeEmpty())
		Expect(len(notAsked)).To(BeNumerically("<=", len(expect("os=debian"))-5))
		asked := len(expect("os=debian")) - len(notAsked)
		Expect(asked).To(BeNumerically(">=", 5))
		Expect(asked).To(BeNumerically("<", len(expect("os=debian"))))
	})
})

var _ = Describe("Hosts that do not answer", func() {
	It("end as no reply within the deadline, exit 3: a stalled agent and a never-connected host", func() {
		f := startFleet(3, "live", map[string]any{"os": "debian"})
		// A stalled agent: announces itself, never answers requests.
		nc, err := nats.Connect(f.url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		_, err = nc.Subscribe(protocol.DiscoverySubjectAll, func(m *nats.Msg) {
			req, err := protocol.DecodeDiscoveryRequest(m.Data, protocol.Limits{})
			if err != nil {
				return
			}
			b, _ := json.Marshal(&protocol.DiscoveryReply{Protocol: protocol.DiscoveryReplyProtocol, RequestID: req.ID, Identity: "stalled-1", Facts: map[string]any{"os": "debian", "identity": "stalled-1"}})
			_ = m.Respond(b)
		})
		Expect(err).ToNot(HaveOccurred())
		_, err = nc.Subscribe(protocol.RequestSubjectAll, func(*nats.Msg) {})
		Expect(err).ToNot(HaveOccurred())
		Expect(nc.Flush()).To(Succeed())
		// It registered, too, as agents do: discovery by registry expects it.
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		kv, err := js.KeyValue(context.Background(), protocol.NodesBucket)
		Expect(err).ToNot(HaveOccurred())
		entry, _ := json.Marshal(&protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: "stalled-1", Facts: map[string]any{"os": "debian", "identity": "stalled-1"}})
		_, err = kv.Put(context.Background(), "stalled-1", entry)
		Expect(err).ToNot(HaveOccurred())

		code, doc := f.orchJSON("ensure", "exec", "/bin/true", "--reply-timeout", "2s")
		Expect(code).To(Equal(3))
		Expect(identities(doc, "no_reply")).To(Equal([]string{"stalled-1"}))
		Expect(doc["replied"]).To(BeNumerically("==", 3))

		code, doc = f.orchJSON("ensure", "exec", "/bin/true", "--host", "live-0001", "--host", "ghost-1", "--reply-timeout", "2s")
		Expect(code).To(Equal(3))
		Expect(identities(doc, "no_reply")).To(Equal([]string{"ghost-1"}))
	})
})
