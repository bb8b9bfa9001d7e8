package orchestrator

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("the default reply timeout", func() {
	ensure := func(typeName string, props map[string]any) *protocol.EnsureRequest {
		GinkgoHelper()
		req, err := protocol.NewEnsureRequest(typeName, props)
		Expect(err).NotTo(HaveOccurred())
		return req
	}

	It("is the fleet's 10s for most types and a package's 5m for a package, which real package managers need; a timeout given is kept", func() {
		r, err := Request{Ensure: ensure("file", map[string]any{"name": "/tmp/x", "ensure": "absent"})}.normalize()
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Timeout).To(Equal(10 * time.Second))

		r, err = Request{Ensure: ensure("package", map[string]any{"name": "nginx", "ensure": "present"})}.normalize()
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Timeout).To(Equal(5 * time.Minute))

		r, err = Request{Ensure: ensure("package", map[string]any{"name": "nginx", "ensure": "present"}), Timeout: 3 * time.Second}.normalize()
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Timeout).To(Equal(3 * time.Second))
	})

	It("is a package's 5m for a manifest that declares a package, and 10s for one that does not", func() {
		dir := GinkgoT().TempDir()
		write := func(name, body string) *manifest.Manifest {
			GinkgoHelper()
			p := filepath.Join(dir, name)
			Expect(os.WriteFile(p, []byte(body), 0o644)).To(Succeed())
			m, err := manifest.Load(p)
			Expect(err).NotTo(HaveOccurred())
			return m
		}
		timeout := func(m *manifest.Manifest, given time.Duration) time.Duration {
			GinkgoHelper()
			b, err := manifest.NewBundle(m)
			Expect(err).NotTo(HaveOccurred())
			r, err := Request{Manifest: b, Timeout: given}.normalize()
			Expect(err).NotTo(HaveOccurred())
			return r.Timeout
		}
		files := write("files.yaml", "ccm:\n  resources:\n    - file:\n        - /tmp/x:\n            ensure: absent\n")
		Expect(timeout(files, 0)).To(Equal(10 * time.Second))
		pkgs := write("pkgs.yaml", "ccm:\n  resources:\n    - file:\n        - /tmp/x:\n            ensure: absent\n    - package:\n        - nginx:\n            ensure: present\n")
		Expect(timeout(pkgs, 0)).To(Equal(5 * time.Minute))
		Expect(timeout(pkgs, 7*time.Second)).To(Equal(7 * time.Second))
	})
})
