package manifest_test

import (
	"encoding/json"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
)

// writeTree creates files (path -> content) below dir.
func writeTree(dir string, files map[string]string) {
	GinkgoHelper()
	for p, body := range files {
		full := filepath.Join(dir, p)
		Expect(os.MkdirAll(filepath.Dir(full), 0o755)).To(Succeed())
		Expect(os.WriteFile(full, []byte(body), 0o644)).To(Succeed())
	}
}

var _ = Describe("Bundle", func() {
	var src string
	BeforeEach(func() { src = GinkgoT().TempDir() })

	load := func(doc string) *manifest.Manifest {
		GinkgoHelper()
		Expect(os.WriteFile(filepath.Join(src, "site.yaml"), []byte(doc), 0o644)).To(Succeed())
		m, err := manifest.Load(filepath.Join(src, "site.yaml"))
		Expect(err).ToNot(HaveOccurred())
		return m
	}

	It("carries an apply resource's child directory and a resources_jet_file, so they run on the host as here", func() {
		writeTree(src, map[string]string{
			"app/manifest.yaml":    "ccm: {resources: [{file: [{/tmp/ccm-bundle-child: {source: files/x, owner: root, group: root, mode: \"0644\"}}]}]}\n",
			"app/files/x":          "child source\n",
			"side.yaml":            "ccm: {}\n",
			"unrelated/secret.txt": "not bundled\n",
		})
		m := load("ccm:\n  resources:\n    - apply:\n        - app/manifest.yaml: {}\n        - side.yaml: {}\n")
		b, err := manifest.NewBundle(m)
		Expect(err).ToNot(HaveOccurred())
		Expect(b.Files).To(HaveKey("app/manifest.yaml"))
		Expect(b.Files).To(HaveKey("app/files/x"))
		Expect(b.Files).To(HaveKey("side.yaml"))
		Expect(b.Files).ToNot(HaveKey("unrelated/secret.txt"))

		writeTree(src, map[string]string{"resources.jet": "- exec:\n    - /bin/true: {}\n"})
		b, err = manifest.NewBundle(load("ccm:\n  resources_jet_file: resources.jet\n"))
		Expect(err).ToNot(HaveOccurred())
		Expect(b.Files).To(HaveKeyWithValue("resources.jet", []byte("- exec:\n    - /bin/true: {}\n")))
		Expect(b.Files).ToNot(HaveKey("unrelated/secret.txt"))
	})

	It("carries relative file and scaffold sources and unpacks them into a fresh directory", func() {
		writeTree(src, map[string]string{
			"files/motd.txt":            "hello\n",
			"files/debian/app.conf":     "debian\n",
			"templates/site/index.html": "{{ .facts.hostname }}\n",
			"templates/site/css/a.css":  "body {}\n",
			"unrelated/secret.txt":      "not bundled\n",
		})
		m := load(`
ccm:
  resources:
    - file:
        - /tmp/ccm-bundle-motd: {source: files/motd.txt, owner: root, group: root, mode: "0644"}
        - /tmp/ccm-bundle-app: {source: "files/{{ lookup('facts.os') }}/app.conf", owner: root, group: root, mode: "0644"}
        - /tmp/ccm-bundle-abs: {source: /etc/hostname, owner: root, group: root, mode: "0644"}
    - scaffold:
        - /tmp/ccm-bundle-site: {source: templates/site}
`)
		b, err := manifest.NewBundle(m)
		Expect(err).ToNot(HaveOccurred())
		Expect(b.Files).To(Equal(map[string][]byte{
			"files/motd.txt":            []byte("hello\n"),
			"files/debian/app.conf":     []byte("debian\n"),
			"templates/site/index.html": []byte("{{ .facts.hostname }}\n"),
			"templates/site/css/a.css":  []byte("body {}\n"),
		}))

		By("travelling as JSON")
		wire, err := json.Marshal(b)
		Expect(err).ToNot(HaveOccurred())
		var got manifest.Bundle
		Expect(json.Unmarshal(wire, &got)).To(Succeed())

		dest := filepath.Join(GinkgoT().TempDir(), "run")
		um, err := got.Unpack(dest)
		Expect(err).ToNot(HaveOccurred())
		Expect(um.WorkingDir()).To(Equal(dest))
		Expect(os.ReadFile(filepath.Join(dest, "files", "motd.txt"))).To(Equal([]byte("hello\n")))
		Expect(os.ReadFile(filepath.Join(dest, "templates", "site", "css", "a.css"))).To(Equal([]byte("body {}\n")))
		fi, err := os.Stat(dest)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o700)))
		Expect(um.Document()).To(MatchJSON(m.Document()))

		r, err := um.Resolve(manifest.RunOptions{Facts: map[string]any{"os": "debian"}})
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Resources).To(HaveLen(4))
	})

	It("accepts an existing empty directory but not one with files", func() {
		b := &manifest.Bundle{Manifest: json.RawMessage(`{"ccm": {"resources": []}}`), Files: map[string][]byte{"a": []byte("x")}}
		empty := GinkgoT().TempDir()
		_, err := b.Unpack(empty)
		Expect(err).ToNot(HaveOccurred())
		_, err = b.Unpack(empty)
		Expect(err).To(MatchError(manifest.ErrBundle))
		Expect(err).To(MatchError(ContainSubstring("is not empty")))
	})

	DescribeTable("refuses unsafe sources when bundling",
		func(source, want string, prepare func(dir string)) {
			if prepare != nil {
				prepare(src)
			}
			m := load(`
ccm:
  resources:
    - file:
        - /tmp/x: {source: "` + source + `", owner: root, group: root, mode: "0644"}
`)
			_, err := manifest.NewBundle(m)
			Expect(err).To(MatchError(manifest.ErrBundle))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("a path with ..", "../etc/passwd", "must stay inside the manifest's directory", nil),
		Entry("a template first", "{{ lookup('data.x') }}/a", "must start with a literal directory", nil),
		Entry("a missing file", "files/none", "no such file", nil),
		Entry("a symlink out of the directory", "files/link", "escapes", func(dir string) {
			Expect(os.MkdirAll(filepath.Join(dir, "files"), 0o755)).To(Succeed())
			Expect(os.Symlink("/etc/hostname", filepath.Join(dir, "files", "link"))).To(Succeed())
		}),
		Entry("a symlink out inside a directory source", "files", "escapes", func(dir string) {
			Expect(os.MkdirAll(filepath.Join(dir, "files"), 0o755)).To(Succeed())
			Expect(os.Symlink("/etc/hostname", filepath.Join(dir, "files", "link"))).To(Succeed())
		}),
	)

	DescribeTable("refuses unsafe paths when unpacking, writing nothing outside",
		func(path string) {
			parent := GinkgoT().TempDir()
			b := &manifest.Bundle{Manifest: json.RawMessage(`{}`), Files: map[string][]byte{path: []byte("x")}}
			_, err := b.Unpack(filepath.Join(parent, "run"))
			Expect(err).To(MatchError(manifest.ErrBundle))
			Expect(filepath.Join(parent, "escaped")).ToNot(BeAnExistingFile())
		},
		Entry("parent directory", "../escaped"),
		Entry("absolute", "/tmp/escaped"),
		Entry("unclean", "a/../../escaped"),
		Entry("empty", ""),
	)

	It("refuses a bundle over the size limit", func() {
		b := &manifest.Bundle{Manifest: json.RawMessage(`{}`), Files: map[string][]byte{"big": make([]byte, manifest.MaxBundleBytes+1)}}
		_, err := b.Unpack(filepath.Join(GinkgoT().TempDir(), "run"))
		Expect(err).To(MatchError(ContainSubstring("exceed")))
	})
})
