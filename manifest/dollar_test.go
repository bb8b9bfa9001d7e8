package manifest_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources"
)

var _ = Describe("${ } expressions in manifests", func() {
	facts := map[string]any{"role": "web", "host": map[string]any{"info": map[string]any{"hostname": "web01"}}}

	It("expands ${ } in names, properties, file content, hierarchy entries and messages", func() {
		m, err := manifest.Parse([]byte(`
data: {motd: base}
hierarchy: {order: ["role:${ Facts.role }"]}
overrides: {"role:web": {motd: "web on ${ Facts.host.info.Hostname }"}}
ccm:
  pre_message: "starting ${ Data.motd }"
  resources:
    - file:
        - "/tmp/${ Facts.role }.motd":
            content: "${ Data.motd } / {{ lookup('data.motd') }}"
            owner: root
            group: root
            mode: "0644"
`), manifest.ParseOptions{})
		Expect(err).NotTo(HaveOccurred())
		r, err := m.Resolve(manifest.RunOptions{Facts: facts})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Hierarchy).To(Equal([]string{"role:web"}))
		Expect(r.Data).To(Equal(map[string]any{"motd": "web on web01"}))
		Expect(r.PreMessage).To(Equal("starting web on web01"))
		Expect(r.Resources[0].Properties).To(HaveKeyWithValue("name", "/tmp/web.motd"))
		Expect(r.Resources[0].Properties).To(HaveKeyWithValue("content", "web on web01 / web on web01"))
	})

	It("refuses a property reading a key that does not exist instead of writing an empty string", func() {
		m, err := manifest.Parse([]byte(`
ccm:
  resources:
    - file:
        - /tmp/x: {content: "canary-${ Facts.host.info.nope }", owner: root, group: root, mode: "0644"}
`), manifest.ParseOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = m.Resolve(manifest.RunOptions{Facts: facts})
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err.Error()).To(ContainSubstring("gave no value"))
	})

	It("bundles the literal directories before a ${ } in a source", func() {
		dir := GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(dir, "files", "web"), 0o700)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "files", "web", "app.conf"), []byte("web\n"), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(`
ccm:
  resources:
    - file:
        - /tmp/ccm-app: {source: "files/${ Facts.role }/app.conf", owner: root, group: root, mode: "0644"}
`), 0o600)).To(Succeed())
		m, err := manifest.Load(filepath.Join(dir, "manifest.yaml"))
		Expect(err).NotTo(HaveOccurred())
		b, err := manifest.NewBundle(m)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Files).To(Equal(map[string][]byte{"files/web/app.conf": []byte("web\n")}))
	})
})
