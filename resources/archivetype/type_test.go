package archivetype_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// scenario describes the state found on disk before an apply.
type scenario struct {
	absent        bool // ensure: absent
	archive       bool // archive file exists
	creates       bool // creates file exists (and creates is set)
	noCreates     bool // creates property not set
	checksum      string
	cleanup       bool
	ownerMismatch bool
	noExtract     bool // extract_parent not set
}

const (
	csNone     = ""
	csMatch    = "match"
	csMismatch = "mismatch"
)

var content = []byte("archive content v2")

type fixture struct {
	dir  string
	prov *fakeProvider
	p    *archivetype.Properties
}

func setup(sc scenario) *fixture {
	dir := GinkgoT().TempDir()
	f := &fixture{dir: dir, prov: &fakeProvider{content: content, owner: "root", group: "root"}}
	p := validProps()
	p.Name = filepath.Join(dir, "app.tar.gz")
	if !sc.noExtract {
		p.ExtractParent = filepath.Join(dir, "opt")
	}
	if !sc.noCreates {
		p.Creates = filepath.Join(dir, "opt", "bin", "app")
	}
	p.Cleanup = sc.cleanup
	if sc.absent {
		p.Ensure = archivetype.EnsureAbsent
	}
	if sc.archive {
		old := content
		if sc.checksum == csMismatch {
			old = []byte("archive content v1")
		}
		Expect(os.WriteFile(p.Name, old, 0o640)).To(Succeed())
	}
	if sc.checksum != csNone {
		p.Checksum = sha(content)
	}
	if sc.ownerMismatch {
		f.prov.owner = "nobody"
	}
	if sc.creates {
		Expect(os.MkdirAll(filepath.Dir(p.Creates), 0o755)).To(Succeed())
		Expect(os.WriteFile(p.Creates, []byte("x"), 0o644)).To(Succeed())
	}
	Expect(p.Validate()).To(Succeed())
	f.p = p
	return f
}

func (f *fixture) apply(noop bool) (*resources.Outcome, error) {
	return archivetype.Type{}.Apply(context.Background(), &resources.ApplyContext{Noop: noop}, f.p, f.prov)
}

// snapshot records every path under dir with its content.
func snapshot(dir string) map[string]string {
	out := map[string]string{}
	Expect(filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		data := ""
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			data = string(b)
		}
		out[path] = data
		return nil
	})).To(Succeed())
	return out
}

// checkRow runs a scenario in noop, then for real, then again.
func checkRow(sc scenario, stable bool, noopMessage string) {
	f := setup(sc)
	before := snapshot(f.dir)

	out, err := f.apply(true)
	Expect(err).NotTo(HaveOccurred())
	Expect(out.Changed).To(Equal(!stable))
	Expect(out.NoopMessage).To(Equal(noopMessage))
	Expect(out.State.(*protocol.ArchiveState).Metadata.ArchiveExists).To(Equal(sc.archive))
	Expect(f.prov.downloads + f.prov.extracts).To(BeZero())
	Expect(snapshot(f.dir)).To(Equal(before), "noop changed the file system")

	out, err = f.apply(false)
	Expect(err).NotTo(HaveOccurred())
	Expect(out.Changed).To(Equal(!stable))
	Expect(out.NoopMessage).To(BeEmpty())
	Expect(out.State.Common().Stable).To(BeTrue())
	if stable {
		Expect(snapshot(f.dir)).To(Equal(before))
	}

	out, err = f.apply(false)
	Expect(err).NotTo(HaveOccurred())
	Expect(out.Changed).To(BeFalse(), "second run is not stable")
}

var _ = Describe("Type", func() {
	It("names itself archive and defaults to present", func() {
		Expect(archivetype.Type{}.Name()).To(Equal("archive"))
		Expect(archivetype.Type{}.DefaultEnsure()).To(Equal("present"))
		Expect(archivetype.Type{}.NewProperties()).To(BeAssignableToTypeOf(&archivetype.Properties{}))
	})

	DescribeTable("decision table (archive type)", checkRow,
		Entry("ensure: absent + archive missing: stable", scenario{absent: true}, true, ""),
		Entry("ensure: absent + archive exists: remove", scenario{absent: true, archive: true}, false, "Would have removed"),
		Entry("creates file exists: stable (skip all)", scenario{archive: true, creates: true}, true, ""),
		Entry("creates file exists with cleanup: stable (skip all)", scenario{creates: true, cleanup: true}, true, ""),
		Entry("creates file missing: extract needed", scenario{archive: true}, false, "Would have extracted"),
		Entry("cleanup: false + archive missing: download needed", scenario{noCreates: true}, false, "Would have downloaded. Would have extracted"),
		Entry("archive checksum mismatch: re-download needed", scenario{archive: true, creates: true, checksum: csMismatch}, false, "Would have downloaded. Would have extracted"),
		Entry("archive owner/group mismatch: re-download needed", scenario{archive: true, creates: true, ownerMismatch: true}, false, "Would have downloaded. Would have extracted"),
	)

	DescribeTable("decision matrix (http provider)", checkRow,
		Entry("archive no, creates no, checksum n/a, cleanup false: download needed", scenario{}, false, "Would have downloaded. Would have extracted"),
		Entry("archive yes, creates no, checksum yes, cleanup false: extract needed", scenario{archive: true, checksum: csMatch}, false, "Would have extracted"),
		Entry("archive yes, creates yes, checksum yes, cleanup false: stable", scenario{archive: true, creates: true, checksum: csMatch}, true, ""),
		Entry("archive no, creates yes, checksum n/a, cleanup true: stable", scenario{creates: true, checksum: csMatch, cleanup: true}, true, ""),
		Entry("archive yes, creates yes, checksum yes, cleanup true: cleanup needed", scenario{archive: true, creates: true, checksum: csMatch, cleanup: true}, false, "Would have cleaned up"),
	)

	DescribeTable("noop messages",
		func(sc scenario, msg string) {
			out, err := setup(sc).apply(true)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.NoopMessage).To(Equal(msg))
		},
		Entry("download only, nothing to extract", scenario{noExtract: true, noCreates: true}, "Would have downloaded"),
		Entry("download, extract and clean up", scenario{cleanup: true}, "Would have downloaded. Would have extracted. Would have cleaned up"),
		Entry("extract and clean up a kept archive", scenario{archive: true, cleanup: true}, "Would have extracted. Would have cleaned up"),
		Entry("checksum mismatch without extraction", scenario{archive: true, checksum: csMismatch, noExtract: true, noCreates: true}, "Would have downloaded"),
	)

	It("removes the archive for ensure absent and leaves the extracted files", func() {
		f := setup(scenario{absent: true, archive: true, creates: true})
		out, err := f.apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(f.p.Name).NotTo(BeAnExistingFile())
		Expect(f.p.Creates).To(BeAnExistingFile())
		Expect(out.State.Common().Ensure).To(Equal("absent"))
	})

	It("downloads, extracts and cleans up in one run", func() {
		f := setup(scenario{cleanup: true, checksum: csMatch})
		out, err := f.apply(false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(f.prov.downloads).To(Equal(1))
		Expect(f.prov.extracts).To(Equal(1))
		Expect(f.p.Name).NotTo(BeAnExistingFile())
		Expect(f.p.Creates).To(BeAnExistingFile())
	})

	It("fails with ErrDesiredStateFailed when the provider did not reach the state", func() {
		f := setup(scenario{noCreates: true, noExtract: true})
		f.prov.skipWrite = true
		out, err := f.apply(false)
		Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
		Expect(err.Error()).To(ContainSubstring("archive file does not exist"))
		Expect(out.Changed).To(BeTrue())
	})

	It("fails with ErrDesiredStateFailed when extraction did not produce the creates file", func() {
		f := setup(scenario{archive: true})
		f.p.Creates = filepath.Join(f.dir, "opt", "missing")
		prov := &noCreatesProvider{fakeProvider: f.prov}
		out, err := archivetype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, f.p, prov)
		Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
		Expect(err.Error()).To(ContainSubstring("creates file"))
		Expect(out.State).NotTo(BeNil())
	})

	It("returns provider errors with the resource name and reports the state", func() {
		f := setup(scenario{})
		f.prov.downloadErr = errors.New("connection refused")
		out, err := f.apply(false)
		Expect(err).To(MatchError(ContainSubstring("archive " + f.p.Name + ": download: connection refused")))
		Expect(out.Changed).To(BeFalse())
		Expect(out.State).NotTo(BeNil())
		Expect(f.prov.extracts).To(BeZero())
	})

	It("reports a change when extraction fails after a download", func() {
		f := setup(scenario{})
		f.prov.extractErr = errors.New("unsafe entry")
		out, err := f.apply(false)
		Expect(err).To(MatchError(ContainSubstring("extract: unsafe entry")))
		Expect(out.Changed).To(BeTrue())
		Expect(out.State.(*protocol.ArchiveState).Metadata.ArchiveExists).To(BeTrue())
	})

	It("refuses a provider that is not an archive provider", func() {
		f := setup(scenario{})
		_, err := archivetype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, f.p, otherProvider{})
		Expect(err).To(MatchError(archivetype.ErrWrongProvider))
	})

	It("refuses properties of another type", func() {
		_, err := archivetype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, &otherProps{}, &fakeProvider{})
		Expect(err).To(MatchError(ContainSubstring("not *archivetype.Properties")))
	})

	It("never removes a directory at the archive path", func() {
		f := setup(scenario{absent: true})
		Expect(os.Mkdir(f.p.Name, 0o755)).To(Succeed())
		f.prov = &fakeProvider{}
		_, err := archivetype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, f.p, dirProvider{f.prov})
		Expect(err).To(MatchError(ContainSubstring("is a directory")))
		Expect(f.p.Name).To(BeADirectory())
	})
})

type otherProvider struct{}

func (otherProvider) Name() string { return "other" }

type otherProps struct{ resources.CommonProperties }

func (*otherProps) Validate() error { return nil }

// noCreatesProvider extracts without producing the creates file.
type noCreatesProvider struct{ *fakeProvider }

func (n *noCreatesProvider) Extract(context.Context, *archivetype.Properties) error {
	n.extracts++
	return nil
}

// dirProvider reports a directory at the archive path as an existing archive.
type dirProvider struct{ *fakeProvider }

func (d dirProvider) Status(_ context.Context, p *archivetype.Properties) (*protocol.ArchiveState, error) {
	st := &protocol.ArchiveState{
		CommonState: protocol.NewCommonState(protocol.TypeArchive, p.Name, archivetype.EnsurePresent),
		Metadata:    &protocol.ArchiveMetadata{Name: p.Name, ArchiveExists: true, Provider: "fake"},
	}
	return st, nil
}

var _ = Describe("archive diffs", func() {
	It("say what would be downloaded, extracted and cleaned, with checksums", func() {
		f := setup(scenario{cleanup: true, checksum: csMatch})
		out, err := f.apply(true)
		Expect(err).NotTo(HaveOccurred())
		fields := []string{}
		for _, c := range out.Diff.Changes {
			fields = append(fields, c.Field)
		}
		Expect(fields).To(Equal([]string{"download", "extract", "cleanup"}))
		dl := out.Diff.Changes[0]
		Expect(dl.From).To(Equal("absent"))
		Expect(dl.To).To(ContainSubstring(" -> " + f.p.Name + " sha256:" + strings.ToLower(f.p.Checksum)))
		Expect(out.Diff.Changes[1].To).To(Equal("into " + f.p.ExtractParent + " (creates " + f.p.Creates + ")"))
	})

	It("name the archive's current checksum when it is downloaded again", func() {
		f := setup(scenario{archive: true, checksum: csMismatch, noExtract: true, noCreates: true})
		out, err := f.apply(true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Diff.Changes[0].Field).To(Equal("download"))
		Expect(out.Diff.Changes[0].From).To(HavePrefix(f.p.Name + " sha256:"))
	})
})
