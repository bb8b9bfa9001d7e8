package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

// manifestRequest is a fleet request carrying body as its manifest field.
func manifestRequest(id string, noop bool, body []byte) *protocol.FleetRequest {
	req := protocol.NewFleetRequest(id, time.Now(), time.Minute)
	req.Noop = noop
	req.Manifest = body
	return req
}

// bundleOf writes a manifest and the files of a directory it uses as a
// source, loads it as ccm-orch does and returns the encoded bundle.
func bundleOf(doc string, files map[string]string) []byte {
	dir := GinkgoT().TempDir()
	for name, content := range files {
		Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	path := filepath.Join(dir, "site.yaml")
	Expect(os.WriteFile(path, []byte(doc), 0o644)).To(Succeed())
	m, err := manifest.Load(path)
	Expect(err).ToNot(HaveOccurred())
	b, err := manifest.NewBundle(m)
	Expect(err).ToNot(HaveOccurred())
	data, err := json.Marshal(b)
	Expect(err).ToNot(HaveOccurred())
	return data
}

var _ = Describe("Agent manifests", func() {
	facts := map[string]any{"os": "debian", "role": "web"}
	var (
		f      *fixture
		target string
		tmp    string
	)
	// unpacked lists the bundle directories left below os.TempDir().
	unpacked := func() []string {
		m, err := filepath.Glob(filepath.Join(tmp, "ccm-manifest-*"))
		Expect(err).ToNot(HaveOccurred())
		return m
	}
	BeforeEach(func() {
		// Bundles unpack below os.TempDir(); a private one shows what is left.
		tmp = GinkgoT().TempDir()
		GinkgoT().Setenv("TMPDIR", tmp)
		f = startAgent(agent.Config{Identity: "web-1"}, facts)
		target = filepath.Join(f.dir, "web-1")
	})

	siteManifest := func() []byte {
		return bundleOf(`
data:
  greeting: hello
ccm:
  resources:
    - file:
        - defaults:
            owner: root
            group: root
        - "`+f.dir+`/{{ lookup('facts.identity') }}":
            ensure: directory
            mode: "0755"
        - "`+f.dir+`/{{ lookup('facts.identity') }}/motd":
            source: files/motd
            mode: "0644"
            require: ["file#`+f.dir+`/{{ lookup('facts.identity') }}"]
`, map[string]string{"files/motd": "bundled motd\n"})
	}

	It("applies a manifest with a bundled source, then finds it stable, and cleans up", func() {
		body := siteManifest()
		reply := f.send(protocol.RequestNodeSubject("web-1"), manifestRequest("m1", false, body))
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(2))
		Expect(reply.Events[0].ResourceID()).To(Equal("file#" + target))
		Expect(reply.Events[1].ResourceID()).To(Equal("file#" + target + "/motd"))
		for _, ev := range reply.Events {
			Expect(ev.Outcome()).To(Equal("changed"), ev.ResourceID())
		}
		Expect(os.ReadFile(filepath.Join(target, "motd"))).To(Equal([]byte("bundled motd\n")))
		fi, err := os.Stat(target)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.IsDir()).To(BeTrue())

		reply = f.send(protocol.RequestNodeSubject("web-1"), manifestRequest("m2", false, body))
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(2))
		for _, ev := range reply.Events {
			Expect(ev.Outcome()).To(Equal("stable"), ev.ResourceID())
		}
		Expect(unpacked()).To(BeEmpty(), "every unpacked bundle was removed")
		Expect(f.agent.Stats().Executed).To(Equal(int64(2)))
	})

	It("audits under noop: reports drift with the noop message and changes nothing", func() {
		body := siteManifest()
		Expect(f.send(protocol.RequestNodeSubject("web-1"), manifestRequest("a1", false, body)).Error).To(BeNil())
		Expect(os.WriteFile(filepath.Join(target, "motd"), []byte("tampered\n"), 0o644)).To(Succeed())

		reply := f.send(protocol.RequestNodeSubject("web-1"), manifestRequest("a2", true, body))
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(2))
		Expect(reply.Events[0].Outcome()).To(Equal("stable"))
		Expect(reply.Events[1].Outcome()).To(Equal(protocol.EventWouldChange))
		Expect(reply.Events[1].NoopMessage).To(HavePrefix("Would have created the file: "))
		Expect(os.ReadFile(filepath.Join(target, "motd"))).To(Equal([]byte("tampered\n")))
	})

	DescribeTable("answers a manifest that cannot run with bad_request naming the problem, changing nothing",
		func(body func(dir string) string, want string) {
			reply := f.send(protocol.RequestNodeSubject("web-1"), manifestRequest("bad", false, []byte(body(f.dir))))
			Expect(reply.Error).ToNot(BeNil())
			GinkgoWriter.Println(reply.Error.Message)
			Expect(reply.Error.Code).To(Equal(protocol.CodeBadRequest))
			Expect(reply.Error.Message).To(ContainSubstring(want))
			Expect(reply.Events).To(BeEmpty())
			Expect(os.ReadDir(f.dir)).To(BeEmpty())
			Expect(unpacked()).To(BeEmpty())
			Expect(f.agent.Stats().BadRequest).To(Equal(int64(1)))
		},
		Entry("an unknown bundle field",
			func(string) string { return `{"manifest": {}, "extra": 1}` }, `unknown field "extra"`),
		Entry("a bundle without a manifest",
			func(string) string { return `{"files": {}}` }, `field "manifest" is required`),
		Entry("an unknown property",
			func(d string) string {
				return `{"manifest": {"ccm": {"resources": [{"file": [{"` + d + `/x": {"colour": "red"}}]}]}}}`
			}, `unknown property "colour"`),
		Entry("a bundled file escaping the directory",
			func(d string) string {
				return `{"manifest": {"ccm": {"resources": [{"file": [{"` + d + `/x": {"source": "../evil"}}]}]}}, "files": {"../evil": "aGk="}}`
			}, `"../evil"`),
		Entry("a template reading the environment",
			func(d string) string {
				return `{"manifest": {"ccm": {"resources": [{"file": [{"` + d + `/x": {"content": "{{ lookup('environ.HOME') }}"}}]}]}}}`
			}, "not available here"),
		Entry("a template reading a file",
			func(d string) string {
				return `{"manifest": {"ccm": {"resources": [{"file": [{"` + d + `/x": {"content": "{{ file('/etc/hostname') }}"}}]}]}}}`
			}, "not available here"),
	)
})
