package filetype_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

var _ = Describe("diffs of the file type", func() {
	var (
		ctx  context.Context
		dir  string
		path string
		prov *fileposix.Provider
	)
	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		path = filepath.Join(dir, "motd")
		prov = fileposix.New(nil)
	})
	props := func(content *string, mode string) *filetype.Properties {
		p := &filetype.Properties{Content: content, Owner: "root", Group: "root", Mode: filetype.Mode(mode)}
		p.Name = path
		Expect(p.Validate()).To(Succeed())
		return p
	}
	apply := func(p *filetype.Properties, noop bool, limit int64) *protocol.Diff {
		GinkgoHelper()
		out, err := filetype.Type{}.Apply(ctx, &resources.ApplyContext{Noop: noop, DiffLimit: limit}, p, prov)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		return out.Diff
	}
	write := func(content string, mode os.FileMode) {
		GinkgoHelper()
		Expect(os.WriteFile(path, []byte(content), mode)).To(Succeed())
		Expect(os.Chmod(path, mode)).To(Succeed())
	}

	It("gives a unified diff of current against desired content under noop, and changes nothing", func() {
		write("one\ntwo\nthree\n", 0o644)
		d := apply(props(ptr("one\nTWO\nthree\n"), "0644"), true, 0)
		Expect(d.Content).To(Equal("--- " + path + " (current)\n+++ " + path + " (desired)\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"))
		Expect(d.Changes).To(BeEmpty())
		b, _ := os.ReadFile(path)
		Expect(string(b)).To(Equal("one\ntwo\nthree\n"))
	})

	It("gives the same diff for a real change, taken before the file is replaced", func() {
		write("a\n", 0o600)
		d := apply(props(ptr("b\n"), "0644"), false, 0)
		Expect(d.Content).To(ContainSubstring("-a\n+b\n"))
		Expect(d.Changes).To(ConsistOf(protocol.Change{Field: "mode", From: "0600", To: "0644"}))
	})

	It("lists attribute changes alone when only they differ", func() {
		write("same\n", 0o600)
		d := apply(props(ptr("same\n"), "0644"), true, 0)
		Expect(d.Content).To(BeEmpty())
		Expect(d.Summary).To(BeEmpty())
		Expect(d.Changes).To(Equal([]protocol.Change{{Field: "mode", From: "0600", To: "0644"}}))
	})

	It("diffs a missing file against empty content and records the ensure change", func() {
		d := apply(props(ptr("new\n"), "0644"), true, 0)
		Expect(d.Changes).To(Equal([]protocol.Change{{Field: "ensure", From: "absent", To: "present"}}))
		Expect(d.Content).To(HaveSuffix("@@ -0,0 +1 @@\n+new\n"))
	})

	It("summarises binary content with sizes and checksums", func() {
		write("a\x00b", 0o644)
		d := apply(props(ptr("text\n"), "0644"), true, 0)
		Expect(d.Content).To(BeEmpty())
		Expect(d.Summary).To(Equal("binary content differs: current 3 bytes sha256:" + filetype.ChecksumBytes([]byte("a\x00b")) +
			", desired 5 bytes sha256:" + filetype.ChecksumBytes([]byte("text\n"))))
	})

	It("summarises content over the diff limit, on either side", func() {
		big := strings.Repeat("x\n", 40<<10) // 80 KiB, over the default 64 KiB
		write(big, 0o644)
		d := apply(props(ptr("small\n"), "0644"), true, 0)
		Expect(d.Content).To(BeEmpty())
		Expect(d.Summary).To(HavePrefix("content differs (over the 65536-byte diff limit): current 81920 bytes sha256:"))

		write("small\n", 0o644)
		d = apply(props(ptr("smaller\n"), "0644"), true, 4)
		Expect(d.Summary).To(HavePrefix("content differs (over the 4-byte diff limit): current 6 bytes"))
	})

	It("never reads the content of a sensitive file", func() {
		write("old-secret-CANARY\n", 0o600)
		p := props(ptr("new-secret-CANARY\n"), "0600")
		p.Sensitive = true
		d := apply(p, true, 0)
		Expect(d.Summary).To(Equal(protocol.DiffSensitive))
		Expect(d.Content).To(BeEmpty())
	})
})
