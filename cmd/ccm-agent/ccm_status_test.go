package main

import (
	"encoding/json"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// "ccm status TYPE NAME" of CCM's CLI page (docs/content/cli/_index.md,
// "To view the current state of a resource"): the resource's metadata as
// YAML, or JSON with --json; exec and archive are not supported.
var _ = Describe("ccm-agent status", func() {
	var dir, f string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		f = filepath.Join(dir, "motd")
		Expect(os.WriteFile(f, []byte("status-canary"), 0o640)).To(Succeed())
	})

	It("prints a file's metadata as JSON, in CCM's key order, and changes nothing", func() {
		before, err := os.Stat(f)
		Expect(err).ToNot(HaveOccurred())
		code, out, errOut := agent("status", "file", f, "--json")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		var md map[string]any
		Expect(json.Unmarshal([]byte(out), &md)).To(Succeed())
		Expect(md).To(HaveKeyWithValue("name", f))
		Expect(md).To(HaveKeyWithValue("mode", "0640"))
		Expect(md).To(HaveKeyWithValue("provider", "posix"))
		Expect(md).To(HaveKeyWithValue("size", BeNumerically("==", len("status-canary"))))
		Expect(md).To(HaveKey("checksum"))
		Expect(out).To(MatchRegexp(`(?s)^\{\n  "name": .*\n  "checksum": .*\n  "owner": .*\n  "group": .*\n  "mode": .*\n  "provider": .*\n  "mtime": .*\n  "size": `))
		Expect(out).ToNot(ContainSubstring("status-canary"), "the content is never printed")

		after, err := os.Stat(f)
		Expect(err).ToNot(HaveOccurred())
		Expect(after.ModTime()).To(Equal(before.ModTime()))
		Expect(after.Mode().Perm()).To(Equal(os.FileMode(0o640)))
		Expect(os.ReadFile(f)).To(Equal([]byte("status-canary")))
	})

	It("prints YAML by default", func() {
		code, out, _ := agent("status", "file", f)
		Expect(code).To(Equal(0))
		Expect(out).To(HavePrefix("name: " + f + "\nchecksum: "))
		Expect(out).To(ContainSubstring("\nmode: \"0640\"\n"))
	})

	It("reads a directory without changing it, and an absent file as absent", func() {
		code, out, _ := agent("status", "file", dir, "--json")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(`"name": "` + dir + `"`))
		missing := filepath.Join(dir, "nosuch")
		code, out, _ = agent("status", "file", missing, "--json")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(`"name": "` + missing + `"`))
		Expect(missing).ToNot(BeAnExistingFile())
	})

	It("says exec and archive are not supported, as CCM does", func() {
		for _, typ := range []string{"exec", "archive"} {
			code, out, _ := agent("status", typ, "x")
			Expect(code).To(Equal(0))
			Expect(out).To(Equal(unsupportedStatus + "\n"))
		}
	})
})
