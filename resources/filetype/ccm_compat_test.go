package filetype_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

var _ = DescribeTable("DirectoryMode adds the search bit wherever read is granted, as CCM and Puppet do",
	func(in, want string) {
		Expect(filetype.DirectoryMode(in)).To(Equal(want))
	},
	Entry("0644", "0644", "0755"),
	Entry("0640", "0640", "0750"),
	Entry("0600", "0600", "0700"),
	Entry("0444", "0444", "0555"),
	Entry("0200 (no read, no search)", "0200", "0200"),
	Entry("0755 unchanged", "0755", "0755"),
	Entry("0o604", "0o604", "0705"),
	Entry("not a mode: unchanged for validation to report", "rwx", "rwx"),
)

var _ = Describe("Type with the posix provider, where CCM users expect CCM's behaviour", func() {
	var (
		ctx  context.Context
		dir  string
		path string
		ft   filetype.Type
	)
	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		path = filepath.Join(dir, "target")
	})
	props := func(ensure string, content *string, mode string) *filetype.Properties {
		p := &filetype.Properties{Content: content, Owner: "root", Group: "root", Mode: filetype.Mode(mode)}
		p.Name, p.Ensure = path, ensure
		Expect(p.Validate()).To(Succeed())
		return p
	}
	apply := func(p *filetype.Properties, noop bool) (*resources.Outcome, error) {
		return ft.Apply(ctx, &resources.ApplyContext{Noop: noop, WorkingDir: dir}, p, fileposix.New(nil))
	}

	DescribeTable("a directory gets search bits where its mode grants read, and is stable with them",
		func(mode string, want os.FileMode) {
			out, err := apply(props("directory", nil, mode), false)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			fi, err := os.Stat(path)
			Expect(err).ToNot(HaveOccurred())
			Expect(fi.Mode().Perm()).To(Equal(want))
			Expect(out.State.(*protocol.FileState).Metadata.Mode).To(Equal(filetype.FormatMode(uint32(want))))

			out, err = apply(props("directory", nil, mode), false)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeFalse(), "the same mode asked again is stable")
		},
		Entry("0644 makes 0755", "0644", os.FileMode(0o755)),
		Entry("0640 makes 0750", "0640", os.FileMode(0o750)),
		Entry("0600 makes 0700", "0600", os.FileMode(0o700)),
	)

	It("fixes an existing directory's mode to the one with search bits", func() {
		Expect(os.Mkdir(path, 0o700)).To(Succeed())
		Expect(os.Chmod(path, 0o644)).To(Succeed())
		out, err := apply(props("directory", nil, "0644"), true)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have created directory: mode 0644 should be 0755"))
		_, err = apply(props("directory", nil, "0644"), false)
		Expect(err).ToNot(HaveOccurred())
		fi, err := os.Stat(path)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o755)))
	})

	DescribeTable("an existing directory where a file should be is an error naming it, never replaced",
		func(fill bool, noop bool) {
			Expect(os.Mkdir(path, 0o755)).To(Succeed())
			if fill {
				Expect(os.WriteFile(filepath.Join(path, "keep"), []byte("x"), 0o644)).To(Succeed())
			}
			_, err := apply(props("present", ptr("hello\n"), "0644"), noop)
			Expect(err).To(MatchError(filetype.ErrDirectoryInTheWay))
			Expect(err.Error()).To(ContainSubstring(path))
			fi, err := os.Lstat(path)
			Expect(err).ToNot(HaveOccurred())
			Expect(fi.IsDir()).To(BeTrue(), "the directory is still there")
		},
		Entry("empty (was silently replaced before)", false, false),
		Entry("empty, under noop", false, true),
		Entry("not empty", true, false),
	)

	DescribeTable("refuses force with ensure present or directory and writes nothing, as CCM does",
		func(ensure string, content *string, noop bool) {
			p := &filetype.Properties{Content: content, Owner: "root", Group: "root", Mode: "0644", Force: true}
			p.Name, p.Ensure = path, ensure
			_, err := apply(p, noop)
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError(ContainSubstring("property force: true is only valid with ensure absent, not " + ensure)))
			_, err = os.Lstat(path)
			Expect(err).To(MatchError(os.ErrNotExist), "nothing is written")
		},
		Entry("present", "present", ptr("hello\n"), false),
		Entry("present, under noop", "present", ptr("hello\n"), true),
		Entry("directory", "directory", nil, false),
	)

	// CCM's sentences, found by running CCM on the same files under noop:
	// with content set it says "Would have created the file" even when only
	// attributes differ; "Would have updated attributes" only when content
	// is unmanaged. What differs follows ": ", as ours.
	It("says CCM's words for attribute drift of a file with content under noop, with what differs after them", func() {
		Expect(os.WriteFile(path, []byte("same\n"), 0o600)).To(Succeed())
		out, err := apply(props("present", ptr("same\n"), "0644"), true)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(out.NoopMessage).To(Equal("Would have created the file: mode 0600 should be 0644"))
		Expect(os.ReadFile(path)).To(Equal([]byte("same\n")))
	})

	It("says CCM's words for attribute drift of a file without content under noop", func() {
		Expect(os.WriteFile(path, []byte("same\n"), 0o600)).To(Succeed())
		out, err := apply(props("present", nil, "0644"), true)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have updated attributes: mode 0600 should be 0644"))
	})

	It("says CCM's words for a missing file without content under noop", func() {
		out, err := apply(props("present", nil, "0644"), true)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have created an empty file with requested attributes"))
		Expect(path).ToNot(BeAnExistingFile())
	})

	DescribeTable("says CCM's words for removing a directory under noop",
		func(force bool, want string) {
			Expect(os.MkdirAll(filepath.Join(path, "sub"), 0o755)).To(Succeed())
			p := &filetype.Properties{Force: force}
			p.Name, p.Ensure = path, filetype.EnsureAbsent
			out, err := apply(p, true)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.NoopMessage).To(Equal(want))
			Expect(path).To(BeADirectory())
		},
		Entry("without force", false, "Would have removed the directory"),
		Entry("with force", true, "Would have recursively removed the directory"),
	)
})
