package archivehttp_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/archivehttp"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// The archive type driving the real http provider against a test server.
var _ = Describe("archive type with the http provider", func() {
	var (
		srv  *archiveServer
		base string
		prov *archivehttp.Provider
		p    *archivetype.Properties
		data []byte
	)

	apply := func(noop bool) (*resources.Outcome, error) {
		return archivetype.Type{}.Apply(context.Background(), &resources.ApplyContext{Noop: noop}, p, prov)
	}
	meta := func(out *resources.Outcome) *protocol.ArchiveMetadata {
		return out.State.(*protocol.ArchiveState).Metadata
	}

	BeforeEach(func() {
		srv = newServer()
		base = GinkgoT().TempDir()
		data = buildTar(true, file("app/bin/app", "v1"), file("app/README", "readme"))
		url := srv.put("/app-1.0.tar.gz", data)
		p = props(base, "app.tar.gz", url, func(p *archivetype.Properties) {
			p.Checksum = sha(data)
			p.ExtractParent = filepath.Join(base, "opt")
			p.Creates = filepath.Join(base, "opt/app/bin/app")
			p.Owner, p.Group = "nobody", "nogroup"
		})
		prov, _ = newProvider()
	})

	It("downloads and extracts, then is stable on the second run", func() {
		out, err := apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(meta(out).ArchiveExists).To(BeTrue())
		Expect(meta(out).CreatesExists).To(BeTrue())
		Expect(meta(out).Owner).To(Equal("nobody"))
		Expect(os.ReadFile(p.Creates)).To(Equal([]byte("v1")))
		Expect(srv.hits.Load()).To(BeEquivalentTo(1))

		out, err = apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(srv.hits.Load()).To(BeEquivalentTo(1), "a stable run downloaded again")
	})

	It("skips download and extraction when the creates file exists", func() {
		p.Cleanup = true
		Expect(os.MkdirAll(filepath.Dir(p.Creates), 0o755)).To(Succeed())
		Expect(os.WriteFile(p.Creates, []byte("already here"), 0o755)).To(Succeed())
		out, err := apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(srv.hits.Load()).To(BeZero())
		Expect(p.Name).NotTo(BeAnExistingFile())
		Expect(os.ReadFile(p.Creates)).To(Equal([]byte("already here")))
	})

	It("cleans up the archive after extraction and then stays stable", func() {
		p.Cleanup = true
		out, err := apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(p.Name).NotTo(BeAnExistingFile())
		Expect(p.Creates).To(BeAnExistingFile())
		Expect(meta(out).ArchiveExists).To(BeFalse())

		before := tree(base)
		out, err = apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(srv.hits.Load()).To(BeEquivalentTo(1))
		Expect(tree(base)).To(Equal(before))
	})

	It("removes the archive for ensure absent", func() {
		_, err := apply(false)
		Expect(err).NotTo(HaveOccurred())
		p.Ensure = archivetype.EnsureAbsent
		out, err := apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(out.State.Common().Ensure).To(Equal("absent"))
		Expect(p.Name).NotTo(BeAnExistingFile())

		out, err = apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
	})

	It("changes nothing under noop", func() {
		p.Cleanup = true
		before := tree(base)
		out, err := apply(true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(out.NoopMessage).To(Equal("Would have downloaded. Would have extracted. Would have cleaned up"))
		Expect(srv.hits.Load()).To(BeZero())
		Expect(tree(base)).To(Equal(before))
	})

	It("downloads and extracts again when the expected checksum changes", func() {
		_, err := apply(false)
		Expect(err).NotTo(HaveOccurred())

		v2 := buildTar(true, file("app/bin/app", "v2"))
		p.URL = srv.put("/app-2.0.tar.gz", v2)
		p.Checksum = sha(v2)
		out, err := apply(true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have downloaded. Would have extracted"))

		out, err = apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(os.ReadFile(p.Creates)).To(Equal([]byte("v2")))
	})

	It("fails with the checksum mismatch and leaves nothing when the server content is wrong", func() {
		p.Checksum = sha([]byte("something else"))
		before := tree(base)
		out, err := apply(false)
		Expect(err).To(MatchError(archivehttp.ErrChecksumMismatch))
		Expect(err.Error()).To(ContainSubstring("archive " + p.Name + ": download: GET "))
		Expect(out.Changed).To(BeFalse())
		Expect(tree(base)).To(Equal(before))
	})

	It("fails with ErrDesiredStateFailed when the archive lacks the creates file", func() {
		p.Creates = filepath.Join(base, "opt/app/bin/missing")
		out, err := apply(false)
		Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
		Expect(out.Changed).To(BeTrue())
	})
})
