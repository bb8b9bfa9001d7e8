package filetype_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// snapshot is what a noop must leave unchanged.
type snapshot struct {
	content string
	mode    os.FileMode
	mtime   int64
	uid     uint32
	ino     uint64
}

func snap(path string) snapshot {
	GinkgoHelper()
	b, err := os.ReadFile(path)
	Expect(err).ToNot(HaveOccurred())
	fi, err := os.Lstat(path)
	Expect(err).ToNot(HaveOccurred())
	st := fi.Sys().(*syscall.Stat_t)
	return snapshot{content: string(b), mode: fi.Mode(), mtime: fi.ModTime().UnixNano(), uid: st.Uid, ino: st.Ino}
}

func entries(dir string) []string {
	GinkgoHelper()
	des, err := os.ReadDir(dir)
	Expect(err).ToNot(HaveOccurred())
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

var _ = Describe("Type with the posix provider", func() {
	var (
		ctx  context.Context
		dir  string
		path string
		prov *fileposix.Provider
		ft   filetype.Type
	)

	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		path = filepath.Join(dir, "motd")
		prov = fileposix.New(nil)
	})

	props := func(ensure string, content *string, owner, group, mode string) *filetype.Properties {
		p := &filetype.Properties{Content: content, Owner: owner, Group: group, Mode: filetype.Mode(mode)}
		p.Name, p.Ensure = path, ensure
		Expect(p.Validate()).To(Succeed())
		return p
	}
	apply := func(p *filetype.Properties, noop bool) (*resources.Outcome, error) {
		return ft.Apply(ctx, &resources.ApplyContext{Noop: noop, WorkingDir: dir}, p, prov)
	}

	It("creates a file, then is stable on the second run", func() {
		p := props("present", ptr("Welcome\n"), "nobody", "nogroup", "644")
		out, err := apply(p, false)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		st := out.State.(*protocol.FileState)
		Expect(st.Ensure).To(Equal("present"))
		Expect(st.Metadata.Checksum).To(Equal(filetype.ChecksumBytes([]byte("Welcome\n"))))
		Expect(st.Metadata.Owner).To(Equal("nobody"))
		Expect(st.Metadata.Group).To(Equal("nogroup"))
		Expect(st.Metadata.Mode).To(Equal("0644"))
		Expect(os.ReadFile(path)).To(Equal([]byte("Welcome\n")))

		out, err = apply(p, false)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(entries(dir)).To(Equal([]string{"motd"}))
	})

	It("converges 644 and 0644 to the same state", func() {
		_, err := apply(props("present", ptr("x"), "root", "root", "644"), false)
		Expect(err).ToNot(HaveOccurred())
		out, err := apply(props("present", ptr("x"), "root", "root", "0o644"), false)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
	})

	It("rewrites a file whose content differs", func() {
		Expect(os.WriteFile(path, []byte("old"), 0o644)).To(Succeed())
		out, err := apply(props("present", ptr("new"), "root", "root", "0644"), false)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(os.ReadFile(path)).To(Equal([]byte("new")))
	})

	It("manages only attributes when no content is given, keeping the content and the inode", func() {
		Expect(os.WriteFile(path, []byte("keep me"), 0o600)).To(Succeed())
		before := snap(path)
		out, err := apply(props("present", nil, "nobody", "nogroup", "0644"), false)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		after := snap(path)
		Expect(after.content).To(Equal("keep me"))
		Expect(after.ino).To(Equal(before.ino))
		Expect(after.mtime).To(Equal(before.mtime))
		Expect(after.mode.Perm()).To(Equal(os.FileMode(0o644)))
		Expect(after.uid).To(Equal(uint32(65534)))

		out, err = apply(props("present", nil, "nobody", "nogroup", "0644"), false)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
	})

	It("creates a missing file empty when no content is given", func() {
		_, err := apply(props("present", nil, "root", "root", "0640"), false)
		Expect(err).ToNot(HaveOccurred())
		fi, err := os.Stat(path)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Size()).To(BeZero())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o640)))
	})

	It("copies a source relative to the working directory", func() {
		Expect(os.WriteFile(filepath.Join(dir, "src.conf"), []byte("from source\n"), 0o600)).To(Succeed())
		p := props("present", nil, "root", "root", "0644")
		p.Source = "src.conf"
		out, err := apply(p, false)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(os.ReadFile(path)).To(Equal([]byte("from source\n")))
		out, err = apply(p, false)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
	})

	Describe("noop", func() {
		It("leaves a differing file untouched and says what differs", func() {
			Expect(os.WriteFile(path, []byte("old"), 0o600)).To(Succeed())
			before := snap(path)
			out, err := apply(props("present", ptr("new"), "root", "root", "0644"), true)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.NoopMessage).To(Equal("Would have created the file: content differs, mode 0600 should be 0644"))
			Expect(snap(path)).To(Equal(before))
			Expect(entries(dir)).To(Equal([]string{"motd"}))
		})

		It("does not create a missing file", func() {
			out, err := apply(props("present", ptr("new"), "root", "root", "0644"), true)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.NoopMessage).To(Equal("Would have created the file"))
			Expect(path).ToNot(BeAnExistingFile())
			Expect(entries(dir)).To(BeEmpty())
		})

		It("does not create a directory", func() {
			out, err := apply(props("directory", nil, "root", "root", "0755"), true)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.NoopMessage).To(Equal("Would have created directory"))
			Expect(entries(dir)).To(BeEmpty())
		})

		It("does not remove a file", func() {
			Expect(os.WriteFile(path, []byte("stay"), 0o644)).To(Succeed())
			before := snap(path)
			out, err := apply(props("absent", nil, "", "", ""), true)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.NoopMessage).To(Equal("Would have removed the file"))
			Expect(snap(path)).To(Equal(before))
		})
	})

	Describe("ensure absent", func() {
		It("removes a file, then is stable", func() {
			Expect(os.WriteFile(path, []byte("bye"), 0o644)).To(Succeed())
			out, err := apply(props("absent", nil, "", "", ""), false)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.State.Common().Ensure).To(Equal("absent"))
			Expect(path).ToNot(BeAnExistingFile())
			out, err = apply(props("absent", nil, "", "", ""), false)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeFalse())
		})

		It("refuses a non-empty directory without force and removes it with force", func() {
			Expect(os.MkdirAll(filepath.Join(path, "sub"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(path, "sub", "f"), []byte("x"), 0o644)).To(Succeed())
			p := props("absent", nil, "", "", "")
			_, err := apply(p, false)
			Expect(err).To(MatchError(filetype.ErrNotEmpty))
			Expect(err).To(MatchError(ContainSubstring("set force to remove it")))
			Expect(filepath.Join(path, "sub", "f")).To(BeAnExistingFile())

			p.Force = true
			out, err := apply(p, false)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(path).ToNot(BeADirectory())
		})

		It("removes an empty directory without force", func() {
			Expect(os.Mkdir(path, 0o755)).To(Succeed())
			_, err := apply(props("absent", nil, "", "", ""), false)
			Expect(err).ToNot(HaveOccurred())
			Expect(path).ToNot(BeADirectory())
		})
	})

	Describe("ensure directory", func() {
		It("creates a directory with exact attributes, then is stable", func() {
			p := props("directory", nil, "nobody", "nogroup", "0750")
			out, err := apply(p, false)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			st := out.State.(*protocol.FileState)
			Expect(st.Ensure).To(Equal("directory"))
			Expect(st.Metadata.Mode).To(Equal("0750"))
			Expect(st.Metadata.Owner).To(Equal("nobody"))
			Expect(st.Metadata.Checksum).To(BeEmpty())
			out, err = apply(p, false)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeFalse())
		})

		It("fixes the attributes of an existing directory, keeping its content", func() {
			Expect(os.Mkdir(path, 0o700)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(path, "inside"), []byte("x"), 0o644)).To(Succeed())
			_, err := apply(props("directory", nil, "root", "root", "0755"), false)
			Expect(err).ToNot(HaveOccurred())
			fi, err := os.Stat(path)
			Expect(err).ToNot(HaveOccurred())
			Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o755)))
			Expect(filepath.Join(path, "inside")).To(BeAnExistingFile())
		})
	})

	Describe("symbolic links", func() {
		var target string

		BeforeEach(func() {
			target = filepath.Join(dir, "target")
			Expect(os.WriteFile(target, []byte("do not touch"), 0o600)).To(Succeed())
			Expect(os.Symlink(target, path)).To(Succeed())
		})

		It("refuses to write through a link at the path", func() {
			before := snap(target)
			_, err := apply(props("present", ptr("evil"), "nobody", "nogroup", "0666"), false)
			Expect(err).To(MatchError(filetype.ErrSymlink))
			Expect(err).To(MatchError(ContainSubstring("is a symbolic link; refusing to follow it")))
			Expect(snap(target)).To(Equal(before))
			fi, err := os.Lstat(path)
			Expect(err).ToNot(HaveOccurred())
			Expect(fi.Mode() & os.ModeSymlink).ToNot(BeZero())
		})

		It("refuses to change attributes through a link", func() {
			before := snap(target)
			_, err := apply(props("present", nil, "nobody", "nogroup", "0666"), false)
			Expect(err).To(MatchError(filetype.ErrSymlink))
			Expect(snap(target)).To(Equal(before))
		})

		It("removes the link, not its target, for ensure absent", func() {
			_, err := apply(props("absent", nil, "", "", ""), false)
			Expect(err).ToNot(HaveOccurred())
			_, err = os.Lstat(path)
			Expect(err).To(MatchError(os.ErrNotExist))
			Expect(os.ReadFile(target)).To(Equal([]byte("do not touch")))
		})
	})

	It("never leaves temporary files behind", func() {
		for _, c := range []string{"one", "two", "three"} {
			_, err := apply(props("present", ptr(c), "root", "root", "0644"), false)
			Expect(err).ToNot(HaveOccurred())
		}
		_, err := apply(props("present", ptr("x"), "no-such-user-ccm", "root", "0644"), false)
		Expect(err).To(MatchError(ContainSubstring(`could not lookup user "no-such-user-ccm"`)))
		Expect(entries(dir)).To(Equal([]string{"motd"}))
	})
})
