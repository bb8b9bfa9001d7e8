package orchestrator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

// loadBundle writes doc as a manifest next to files and bundles it.
func loadBundle(doc string, files map[string]string) *manifest.Bundle {
	dir := GinkgoT().TempDir()
	for name, content := range files {
		Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	path := filepath.Join(dir, "site.yaml")
	Expect(os.WriteFile(path, []byte(doc), 0o644)).To(Succeed())
	m, err := manifest.Load(path)
	Expect(err).NotTo(HaveOccurred())
	b, err := manifest.NewBundle(m)
	Expect(err).NotTo(HaveOccurred())
	return b
}

var _ = Describe("Client.Run with a manifest", func() {
	var (
		fl     *fleettest.Fleet
		nc     *nats.Conn
		client *orchestrator.Client
		ctx    context.Context
		dir    string
		bundle *manifest.Bundle
		dirRef string
		motd   string
	)
	BeforeEach(func() {
		fl = startFleet()
		nc = fl.Connect(GinkgoT())
		client = orchestrator.New(nc)
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		dirRef = "file#" + dir + "/{{ lookup('facts.identity') }}"
		motd = dirRef + "/motd"
		bundle = loadBundle(`
ccm:
  resources:
    - file:
        - "`+dir+`/{{ lookup('facts.identity') }}":
            ensure: directory
            owner: root
            group: root
            mode: "0755"
        - "`+dir+`/{{ lookup('facts.identity') }}/motd":
            source: files/motd
            owner: root
            group: root
            mode: "0644"
`, map[string]string{"files/motd": "from the bundle\n"})
	})

	It("applies it everywhere, groups per declared resource, then audits the drift of the hosts tampered with", func() {
		res, err := client.Run(ctx, orchestrator.Request{Manifest: bundle})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(protocol.ExitOK))
		Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{Changed: fleetSize}))
		Expect(res.Summary.Resources).To(Equal(orchestrator.ResourceCounts{Changed: 2 * fleetSize}))
		Expect(res.Groups).To(Equal([]orchestrator.Group{
			{Resource: dirRef, Outcome: "changed", Hosts: fl.Identities, Count: fleetSize},
			{Resource: motd, Outcome: "changed", Hosts: fl.Identities, Count: fleetSize},
		}))
		Expect(res.Resources).To(HaveLen(2))
		Expect(res.Resources[0].Resource).To(Equal(dirRef), "declaration order")
		Expect(res.Resources[1].Resource).To(Equal(motd))
		Expect(res.Resources[1].Counts).To(Equal(orchestrator.ResourceCounts{Changed: fleetSize}))
		for _, id := range fl.Identities {
			Expect(os.ReadFile(filepath.Join(dir, id, "motd"))).To(Equal([]byte("from the bundle\n")))
		}

		tampered := []string{fl.Identities[2], fl.Identities[7]}
		for _, id := range tampered {
			Expect(os.WriteFile(filepath.Join(dir, id, "motd"), []byte("local edit\n"), 0o644)).To(Succeed())
		}
		res, err = client.Run(ctx, orchestrator.Request{Manifest: bundle, Noop: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(protocol.ExitDrift))
		Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{OK: fleetSize - 2, WouldChange: 2}))
		Expect(res.Resources[0].Groups).To(Equal([]orchestrator.Group{{Resource: dirRef, Outcome: "stable", Hosts: fl.Identities, Count: fleetSize}}))
		drift := res.Resources[1].Groups
		Expect(drift).To(HaveLen(2))
		Expect(drift[0].Outcome).To(Equal("stable"))
		Expect(drift[0].Count).To(Equal(fleetSize - 2))
		Expect(drift[1].Outcome).To(Equal("would_change"))
		Expect(drift[1].Hosts).To(Equal(tampered))
		Expect(drift[1].Message).To(HavePrefix("Would have created the file: "))
		for _, id := range tampered {
			Expect(os.ReadFile(filepath.Join(dir, id, "motd"))).To(Equal([]byte("local edit\n")), "noop changed nothing")
		}
	})

	It("sends the bundle in the manifest field of the fleet request", func() {
		sub := sniff(nc, protocol.RequestSubjectPrefix+".>")
		res, err := client.Run(ctx, orchestrator.Request{Manifest: bundle, Hosts: []string{"sim-0001"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(protocol.ExitOK))
		msgs := sent(nc, sub)
		Expect(msgs).To(HaveLen(1))
		req, err := protocol.DecodeFleetRequest(msgs[0].Data, protocol.Limits{})
		Expect(err).NotTo(HaveOccurred())
		Expect(req.Ensure).To(BeNil())
		var got manifest.Bundle
		Expect(json.Unmarshal(req.Manifest, &got)).To(Succeed())
		Expect(got.Files).To(Equal(map[string][]byte{"files/motd": []byte("from the bundle\n")}))
		Expect(got.Manifest).To(MatchJSON(bundle.Manifest))
	})

	DescribeTable("refuses an invalid manifest request before sending anything",
		func(req func() orchestrator.Request, want string) {
			sub := sniff(nc, protocol.SubjectRoot+".>")
			_, err := client.Run(ctx, req())
			Expect(err).To(MatchError(orchestrator.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(want))
			Expect(sent(nc, sub)).To(BeEmpty())
		},
		Entry("both bodies", func() orchestrator.Request {
			return orchestrator.Request{Manifest: bundle, Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"})}
		}, "not both"),
		Entry("a bundle without a document", func() orchestrator.Request {
			return orchestrator.Request{Manifest: &manifest.Bundle{}}
		}, "no manifest document"),
		Entry("a bundle larger than agents accept", func() orchestrator.Request {
			big := &manifest.Bundle{Manifest: bundle.Manifest, Files: map[string][]byte{"files/big": []byte(strings.Repeat("x", 800<<10))}}
			return orchestrator.Request{Manifest: big}
		}, "more than the 1048576 bytes agents accept"),
		Entry("a bundle larger than a lower limit", func() orchestrator.Request {
			return orchestrator.Request{Manifest: bundle, MaxRequestBytes: 100}
		}, "more than the 100 bytes"),
	)
})
