package fileposix_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// failAfter is a context whose Err reports cancellation after n checks, to
// make Store fail in the middle of writing.
type failAfter struct {
	context.Context
	n atomic.Int32
}

func (c *failAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func listDir(dir string) []string {
	GinkgoHelper()
	des, err := os.ReadDir(dir)
	Expect(err).ToNot(HaveOccurred())
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

func statT(path string) *syscall.Stat_t {
	GinkgoHelper()
	fi, err := os.Lstat(path)
	Expect(err).ToNot(HaveOccurred())
	return fi.Sys().(*syscall.Stat_t)
}

var _ = Describe("Provider.Store", func() {
	var (
		ctx  context.Context
		dir  string
		path string
		prov *fileposix.Provider
	)

	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		path = filepath.Join(dir, "app.conf")
		prov = fileposix.New(nil)
	})

	It("writes content with exact owner, group and mode, whatever the umask", func() {
		Expect(prov.Store(ctx, path, []byte("a=1\n"), "", "nobody", "nogroup", "0666")).To(Succeed())
		Expect(os.ReadFile(path)).To(Equal([]byte("a=1\n")))
		st := statT(path)
		Expect(st.Uid).To(Equal(uint32(65534)))
		Expect(st.Gid).To(Equal(uint32(65534)))
		Expect(st.Mode & 0o7777).To(Equal(uint32(0o666)))
		Expect(listDir(dir)).To(Equal([]string{"app.conf"}))
	})

	It("replaces an existing file by rename, never in place", func() {
		Expect(os.WriteFile(path, []byte("old"), 0o644)).To(Succeed())
		before := statT(path).Ino
		Expect(prov.Store(ctx, path, []byte("new"), "", "root", "root", "0640")).To(Succeed())
		Expect(os.ReadFile(path)).To(Equal([]byte("new")))
		Expect(statT(path).Ino).ToNot(Equal(before))
		Expect(listDir(dir)).To(Equal([]string{"app.conf"}))
	})

	It("creates an empty file when both contents and source are empty", func() {
		Expect(prov.Store(ctx, path, nil, "", "root", "root", "0644")).To(Succeed())
		fi, err := os.Stat(path)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Size()).To(BeZero())
	})

	It("copies from a source file", func() {
		src := filepath.Join(dir, "source")
		Expect(os.WriteFile(src, []byte(strings.Repeat("line\n", 10000)), 0o600)).To(Succeed())
		Expect(prov.Store(ctx, path, nil, src, "root", "root", "0644")).To(Succeed())
		Expect(os.ReadFile(path)).To(Equal([]byte(strings.Repeat("line\n", 10000))))
	})

	It("accepts numeric owner and group", func() {
		Expect(prov.Store(ctx, path, nil, "", "12345", "23456", "0644")).To(Succeed())
		st := statT(path)
		Expect(st.Uid).To(Equal(uint32(12345)))
		Expect(st.Gid).To(Equal(uint32(23456)))
	})

	It("handles a name as long as the filesystem allows", func() {
		long := filepath.Join(dir, strings.Repeat("n", 255))
		Expect(prov.Store(ctx, long, []byte("x"), "", "root", "root", "0644")).To(Succeed())
		Expect(long).To(BeAnExistingFile())
		Expect(listDir(dir)).To(HaveLen(1))
	})

	DescribeTable("refuses what it cannot store, naming the problem, and leaves no temporary file",
		func(setup func() (name, source, owner, group, mode string), want ...any) {
			name, source, owner, group, mode := setup()
			err := prov.Store(ctx, name, []byte("x"), source, owner, group, mode)
			Expect(err).To(HaveOccurred())
			for _, w := range want {
				switch w := w.(type) {
				case string:
					Expect(err.Error()).To(ContainSubstring(w))
				case error:
					Expect(err).To(MatchError(w))
				}
			}
			Expect(listDir(dir)).ToNot(ContainElement(ContainSubstring(".ccm-")))
		},
		Entry("parent directory doesn't exist", func() (string, string, string, string, string) {
			return filepath.Join(dir, "missing", "f"), "", "root", "root", "0644"
		}, "parent directory ", "/missing does not exist", os.ErrNotExist),
		Entry("parent is not a directory", func() (string, string, string, string, string) {
			Expect(os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644)).To(Succeed())
			return filepath.Join(dir, "plain", "f"), "", "root", "root", "0644"
		}, "is not a directory", syscall.ENOTDIR),
		Entry("invalid mode format", func() (string, string, string, string, string) {
			return path, "", "root", "root", "0888"
		}, resources.ErrInvalid, "property mode"),
		Entry("source file not found", func() (string, string, string, string, string) {
			return path, filepath.Join(dir, "no-source"), "root", "root", "0644"
		}, os.ErrNotExist, "source"),
		Entry("source is a directory", func() (string, string, string, string, string) {
			return path, dir, "root", "root", "0644"
		}, filetype.ErrUnsupportedFileType),
		Entry("user not found", func() (string, string, string, string, string) {
			return path, "", "no-such-user-ccm", "root", "0644"
		}, `could not lookup user "no-such-user-ccm"`),
		Entry("group not found", func() (string, string, string, string, string) {
			return path, "", "root", "no-such-group-ccm", "0644"
		}, `could not lookup group "no-such-group-ccm"`),
		Entry("target is a directory", func() (string, string, string, string, string) {
			Expect(os.Mkdir(path, 0o755)).To(Succeed())
			return path, "", "root", "root", "0644"
		}, "is a directory", syscall.EISDIR),
		Entry("target is a FIFO", func() (string, string, string, string, string) {
			Expect(syscall.Mkfifo(path, 0o644)).To(Succeed())
			return path, "", "root", "root", "0644"
		}, filetype.ErrUnsupportedFileType),
		Entry("relative path", func() (string, string, string, string, string) {
			return "relative/f", "", "root", "root", "0644"
		}, resources.ErrInvalid),
	)

	It("refuses to write through a symbolic link at the path", func() {
		target := filepath.Join(dir, "target")
		Expect(os.WriteFile(target, []byte("precious"), 0o600)).To(Succeed())
		Expect(os.Symlink(target, path)).To(Succeed())
		err := prov.Store(ctx, path, []byte("evil"), "", "nobody", "nogroup", "0666")
		Expect(err).To(MatchError(filetype.ErrSymlink))
		Expect(os.ReadFile(target)).To(Equal([]byte("precious")))
		Expect(statT(target).Mode & 0o777).To(Equal(uint32(0o600)))
		Expect(listDir(dir)).To(ConsistOf("target", "app.conf"))
	})

	It("removes the temporary file when writing fails part way", func() {
		Expect(os.WriteFile(path, []byte("original"), 0o644)).To(Succeed())
		fctx := &failAfter{Context: ctx}
		fctx.n.Store(1)
		err := prov.Store(fctx, path, []byte("never written"), "", "root", "root", "0644")
		Expect(err).To(MatchError(context.Canceled))
		Expect(err).To(MatchError(ContainSubstring("could not write temporary file")))
		Expect(os.ReadFile(path)).To(Equal([]byte("original")))
		Expect(listDir(dir)).To(Equal([]string{"app.conf"}))
	})

	It("does nothing with a cancelled context", func() {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		Expect(prov.Store(cctx, path, []byte("x"), "", "root", "root", "0644")).To(MatchError(context.Canceled))
		Expect(listDir(dir)).To(BeEmpty())
	})
})

var _ = Describe("Provider.CreateDirectory", func() {
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

	It("creates the directory and its parents, with exact mode and owner on the directory", func() {
		leaf := filepath.Join(dir, "a", "b", "c")
		Expect(prov.CreateDirectory(ctx, leaf, "nobody", "nogroup", "0707")).To(Succeed())
		st := statT(leaf)
		Expect(st.Mode & 0o7777).To(Equal(uint32(0o707)))
		Expect(st.Uid).To(Equal(uint32(65534)))
		Expect(st.Gid).To(Equal(uint32(65534)))
		Expect(filepath.Join(dir, "a", "b")).To(BeADirectory())
	})

	It("fixes the attributes of an existing directory and clears special bits", func() {
		d := filepath.Join(dir, "d")
		Expect(os.Mkdir(d, 0o700)).To(Succeed())
		Expect(os.Chmod(d, 0o700|os.ModeSetgid)).To(Succeed())
		Expect(prov.CreateDirectory(ctx, d, "root", "nogroup", "0755")).To(Succeed())
		st := statT(d)
		Expect(st.Mode & 0o7777).To(Equal(uint32(0o755)))
		Expect(st.Gid).To(Equal(uint32(65534)))
	})

	It("refuses a symbolic link to a directory, leaving the target alone", func() {
		target := filepath.Join(dir, "real")
		Expect(os.Mkdir(target, 0o700)).To(Succeed())
		link := filepath.Join(dir, "link")
		Expect(os.Symlink(target, link)).To(Succeed())
		Expect(prov.CreateDirectory(ctx, link, "nobody", "nogroup", "0777")).To(MatchError(filetype.ErrSymlink))
		st := statT(target)
		Expect(st.Mode & 0o7777).To(Equal(uint32(0o700)))
		Expect(st.Uid).To(BeZero())
	})

	It("refuses a regular file at the path", func() {
		f := filepath.Join(dir, "f")
		Expect(os.WriteFile(f, []byte("x"), 0o644)).To(Succeed())
		err := prov.CreateDirectory(ctx, f, "root", "root", "0755")
		Expect(err).To(MatchError(syscall.ENOTDIR))
		Expect(err).To(MatchError(ContainSubstring("exists and is not a directory")))
	})

	It("rejects an invalid mode", func() {
		Expect(prov.CreateDirectory(ctx, filepath.Join(dir, "x"), "root", "root", "rw-r--r--")).To(MatchError(resources.ErrInvalid))
		Expect(listDir(dir)).To(BeEmpty())
	})
})

var _ = Describe("Provider.SetAttributes", func() {
	var (
		ctx  context.Context
		dir  string
		path string
		prov *fileposix.Provider
	)

	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		path = filepath.Join(dir, "f")
		prov = fileposix.New(nil)
	})

	It("changes owner, group and mode without touching content, inode or mtime", func() {
		Expect(os.WriteFile(path, []byte("keep"), 0o600)).To(Succeed())
		before := statT(path)
		Expect(prov.SetAttributes(ctx, path, "nobody", "nogroup", "0640")).To(Succeed())
		after := statT(path)
		Expect(after.Ino).To(Equal(before.Ino))
		Expect(after.Mtim).To(Equal(before.Mtim))
		Expect(after.Uid).To(Equal(uint32(65534)))
		Expect(after.Gid).To(Equal(uint32(65534)))
		Expect(after.Mode & 0o7777).To(Equal(uint32(0o640)))
		Expect(os.ReadFile(path)).To(Equal([]byte("keep")))

		Expect(prov.SetAttributes(ctx, path, "root", "root", "0644")).To(Succeed())
		Expect(statT(path).Uid).To(BeZero())
	})

	It("refuses a symbolic link, leaving its target alone", func() {
		target := filepath.Join(dir, "target")
		Expect(os.WriteFile(target, []byte("x"), 0o600)).To(Succeed())
		Expect(os.Symlink(target, path)).To(Succeed())
		Expect(prov.SetAttributes(ctx, path, "nobody", "nogroup", "0666")).To(MatchError(filetype.ErrSymlink))
		st := statT(target)
		Expect(st.Mode & 0o7777).To(Equal(uint32(0o600)))
		Expect(st.Uid).To(BeZero())
	})

	It("refuses a FIFO", func() {
		Expect(syscall.Mkfifo(path, 0o600)).To(Succeed())
		Expect(prov.SetAttributes(ctx, path, "root", "root", "0644")).To(MatchError(filetype.ErrUnsupportedFileType))
	})

	It("fails for a missing file", func() {
		Expect(prov.SetAttributes(ctx, path, "root", "root", "0644")).To(MatchError(os.ErrNotExist))
	})
})

var _ = Describe("Provider.Remove", func() {
	var (
		ctx  context.Context
		dir  string
		path string
		prov *fileposix.Provider
	)

	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		path = filepath.Join(dir, "victim")
		prov = fileposix.New(nil)
	})

	DescribeTable("removes what is at the path",
		func(setup func(), force bool) {
			setup()
			Expect(prov.Remove(ctx, path, force)).To(Succeed())
			_, err := os.Lstat(path)
			Expect(err).To(MatchError(os.ErrNotExist))
		},
		Entry("a file", func() { Expect(os.WriteFile(path, nil, 0o644)).To(Succeed()) }, false),
		Entry("an empty directory", func() { Expect(os.Mkdir(path, 0o755)).To(Succeed()) }, false),
		Entry("a FIFO", func() { Expect(syscall.Mkfifo(path, 0o600)).To(Succeed()) }, false),
		Entry("nothing (missing is not an error)", func() {}, false),
		Entry("a non-empty directory with force", func() {
			Expect(os.MkdirAll(filepath.Join(path, "a", "b"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(path, "a", "b", "f"), nil, 0o644)).To(Succeed())
		}, true),
	)

	It("refuses a non-empty directory without force", func() {
		Expect(os.Mkdir(path, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(path, "f"), nil, 0o644)).To(Succeed())
		err := prov.Remove(ctx, path, false)
		Expect(err).To(MatchError(filetype.ErrNotEmpty))
		Expect(err).To(MatchError(ContainSubstring("directory is not empty; set force to remove it")))
		Expect(filepath.Join(path, "f")).To(BeAnExistingFile())
	})

	It("removes a link, never its target, even with force", func() {
		target := filepath.Join(dir, "target")
		Expect(os.Mkdir(target, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(target, "f"), nil, 0o644)).To(Succeed())
		Expect(os.Symlink(target, path)).To(Succeed())
		Expect(prov.Remove(ctx, path, true)).To(Succeed())
		Expect(filepath.Join(target, "f")).To(BeAnExistingFile())
	})

	It("never removes /", func() {
		Expect(prov.Remove(ctx, "/", true)).To(MatchError(filetype.ErrRemoveRoot))
		Expect(prov.Remove(ctx, "//", true)).To(MatchError(filetype.ErrRemoveRoot))
		Expect("/etc").To(BeADirectory())
	})

	It("refuses a relative path", func() {
		Expect(prov.Remove(ctx, "victim", true)).To(MatchError(resources.ErrInvalid))
	})
})
