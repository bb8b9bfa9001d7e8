package fileposix_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

var _ = Describe("Provider.Status", func() {
	var (
		ctx  context.Context
		dir  string
		prov *fileposix.Provider
	)

	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		prov = fileposix.New(nil)
	})

	DescribeTable("reports present (with a checksum), directory, absent, symlink or special (with lstat: links are reported, not followed)",
		func(setup func(path string), wantEnsure string, wantChecksum bool) {
			path := filepath.Join(dir, "thing")
			setup(path)
			st, err := prov.Status(ctx, path)
			Expect(err).ToNot(HaveOccurred())
			Expect(st.Ensure).To(Equal(wantEnsure))
			Expect(st.Type).To(Equal("file"))
			Expect(st.Protocol).To(Equal("io.choria.ccm.v1.resource.file.state"))
			Expect(st.Name).To(Equal(path))
			Expect(st.Metadata.Name).To(Equal(path))
			Expect(st.Metadata.Provider).To(Equal("posix"))
			if wantChecksum {
				Expect(st.Metadata.Checksum).To(HaveLen(64))
			} else {
				Expect(st.Metadata.Checksum).To(BeEmpty())
			}
			if wantEnsure != "absent" {
				Expect(st.Metadata.Owner).To(Equal("root"))
				Expect(st.Metadata.Group).To(Equal("root"))
				Expect(st.Metadata.MTime).ToNot(BeZero())
			}
		},
		Entry("file exists: present with size, mtime, owner, group, mode, checksum", func(p string) {
			Expect(os.WriteFile(p, []byte("x"), 0o644)).To(Succeed())
		}, "present", true),
		Entry("directory exists: directory with size, mtime, owner, group, mode", func(p string) {
			Expect(os.Mkdir(p, 0o755)).To(Succeed())
		}, "directory", false),
		Entry("os.ErrNotExist: absent", func(string) {}, "absent", false),
		Entry("symbolic link: symlink, never followed", func(p string) {
			Expect(os.WriteFile(p+".target", []byte("x"), 0o644)).To(Succeed())
			Expect(os.Symlink(p+".target", p)).To(Succeed())
		}, "symlink", false),
		Entry("dangling symbolic link: symlink", func(p string) {
			Expect(os.Symlink("/nonexistent/ccm", p)).To(Succeed())
		}, "symlink", false),
		Entry("FIFO: special", func(p string) {
			Expect(syscall.Mkfifo(p, 0o600)).To(Succeed())
		}, "special", false),
	)

	It("reports the metadata of a regular file", func() {
		path := filepath.Join(dir, "motd")
		Expect(os.WriteFile(path, []byte("hello\n"), 0o600)).To(Succeed())
		Expect(os.Chown(path, 65534, 65534)).To(Succeed())
		mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
		Expect(os.Chtimes(path, mtime, mtime)).To(Succeed())

		st, err := prov.Status(ctx, path)
		Expect(err).ToNot(HaveOccurred())
		md := st.Metadata
		Expect(md.Checksum).To(Equal("5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"))
		Expect(md.Owner).To(Equal("nobody"))
		Expect(md.Group).To(Equal("nogroup"))
		Expect(md.Mode).To(Equal("0600"))
		Expect(md.Size).To(Equal(int64(6)))
		Expect(md.MTime).To(Equal(mtime))
		Expect(md.Extended).To(HaveKeyWithValue("uid", uint32(65534)))
		Expect(md.Extended).To(HaveKeyWithValue("gid", uint32(65534)))
	})

	It("falls back to the numeric id when a uid or gid has no name", func() {
		path := filepath.Join(dir, "orphan")
		Expect(os.WriteFile(path, nil, 0o644)).To(Succeed())
		Expect(os.Chown(path, 54321, 54322)).To(Succeed())
		st, err := prov.Status(ctx, path)
		Expect(err).ToNot(HaveOccurred())
		Expect(st.Metadata.Owner).To(Equal("54321"))
		Expect(st.Metadata.Group).To(Equal("54322"))
	})

	It("reports setgid and sticky bits so a mode without them is not mistaken as met", func() {
		path := filepath.Join(dir, "shared")
		Expect(os.Mkdir(path, 0o755)).To(Succeed())
		Expect(os.Chmod(path, 0o775|os.ModeSetgid|os.ModeSticky)).To(Succeed())
		st, err := prov.Status(ctx, path)
		Expect(err).ToNot(HaveOccurred())
		Expect(st.Metadata.Mode).To(Equal("3775"))
	})

	It("reports a link's target without touching it", func() {
		path := filepath.Join(dir, "link")
		Expect(os.Symlink("/etc/hostname", path)).To(Succeed())
		st, err := prov.Status(ctx, path)
		Expect(err).ToNot(HaveOccurred())
		Expect(st.Metadata.Extended).To(HaveKeyWithValue("target", "/etc/hostname"))
	})

	It("returns other lookup errors instead of guessing the state", func() {
		file := filepath.Join(dir, "plain")
		Expect(os.WriteFile(file, nil, 0o644)).To(Succeed())
		_, err := prov.Status(ctx, filepath.Join(file, "below"))
		Expect(err).To(MatchError(syscall.ENOTDIR))
	})

	It("honours a cancelled context", func() {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := prov.Status(cctx, filepath.Join(dir, "x"))
		Expect(err).To(MatchError(context.Canceled))
	})

	It("agrees with the file type's checksum of the same bytes", func() {
		path := filepath.Join(dir, "f")
		Expect(os.WriteFile(path, []byte("same bytes"), 0o644)).To(Succeed())
		st, err := prov.Status(ctx, path)
		Expect(err).ToNot(HaveOccurred())
		Expect(st.Metadata.Checksum).To(Equal(filetype.ChecksumBytes([]byte("same bytes"))))
	})
})
