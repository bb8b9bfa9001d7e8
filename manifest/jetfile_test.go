package manifest_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources"
)

// "Generating resources with Jet templates" of CCM's manifests page
// (docs/content/yamlmanifests/_index.md of github.com/choria-io/ccm).
var _ = Describe("ccm.resources_jet_file", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	write := func(name, body string) string {
		GinkgoHelper()
		p := filepath.Join(dir, name)
		Expect(os.WriteFile(p, []byte(body), 0o644)).To(Succeed())
		return p
	}

	It("renders the page's example into one package resource per data entry, in order", func() {
		write("resources.jet", `{* resources.jet *}
[[ range Data.common_packages ]]
- package:
    - [[ . ]]:
        ensure: present
[[ end ]]
`)
		path := write("manifest.yaml", `
data:
  common_packages:
    - zsh
    - vim-enhanced
    - nagios-plugins-all
    - tar
    - nmap-ncat
ccm:
  resources_jet_file: resources.jet
`)
		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		r, err := m.Resolve(manifest.RunOptions{Facts: map[string]any{"os": "debian"}})
		Expect(err).ToNot(HaveOccurred())
		var names []string
		for _, s := range r.Resources {
			Expect(s.Type).To(Equal("package"))
			Expect(s.Properties).To(HaveKeyWithValue("ensure", "present"))
			names = append(names, s.Properties["name"].(string))
		}
		Expect(names).To(Equal([]string{"zsh", "vim-enhanced", "nagios-plugins-all", "tar", "nmap-ncat"}))
	})

	It("gives the template Facts and lookup(), and runs what it renders", func() {
		write("resources.jet", `- file:
    - `+dir+`/out-[[ Facts.role ]]:
        content: "[[ lookup("data.motd") ]]"
        owner: root
        group: root
        mode: "0644"
`)
		path := write("manifest.yaml", "data: {motd: jet-canary-55}\nccm:\n  resources_jet_file: resources.jet\n")
		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		_, err = manifest.Run(GinkgoT().Context(), realEngine(), m, manifest.RunOptions{Facts: map[string]any{"role": "web"}})
		Expect(err).ToNot(HaveOccurred())
		Expect(os.ReadFile(filepath.Join(dir, "out-web"))).To(Equal([]byte("jet-canary-55")))
	})

	// CCM renders the file with its template environment's variables
	// (facts/Facts, data/Data, environ/Environ) and functions (lookup,
	// file/readFile, template, kvGet): resources/apply/jet.go and
	// templates/jet.go of the CCM snapshot.
	It("renders with the variables and functions of jet(): Facts' Go names, lower-case facts and data, file() and template()", func() {
		write("motd.txt", "from-file-73")
		write("resources.jet", `- file:
    - `+dir+`/[[ Facts.host.info.Hostname ]]-[[ facts.host.info.hostname ]]:
        content: "[[ file("motd.txt") ]] [[ data.motd ]] [[ template("${ Data.motd }") ]]"
        owner: root
        group: root
        mode: "0644"
`)
		path := write("manifest.yaml", "data: {motd: jet-canary-56}\nccm:\n  resources_jet_file: resources.jet\n")
		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		facts := map[string]any{"host": map[string]any{"info": map[string]any{"hostname": "web01"}}}
		r, err := m.Resolve(manifest.RunOptions{Facts: facts, AllowFiles: true})
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Resources).To(HaveLen(1))
		Expect(r.Resources[0].Properties).To(HaveKeyWithValue("name", dir+"/web01-web01"))
		Expect(r.Resources[0].Properties).To(HaveKeyWithValue("content", "from-file-73 jet-canary-56 jet-canary-56"))
	})

	It("offers Environ and environ only where the environment is exposed, as jet() does", func() {
		GinkgoT().Setenv("CCM_JET_CANARY", "env-canary-57")
		write("resources.jet", "- exec:\n    - \"/bin/echo [[ Environ.CCM_JET_CANARY ]] [[ environ.CCM_JET_CANARY ]]\": {}\n")
		path := write("manifest.yaml", "ccm:\n  resources_jet_file: resources.jet\n")
		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		r, err := m.Resolve(manifest.RunOptions{AllowEnviron: true})
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Resources[0].Properties).To(HaveKeyWithValue("name", "/bin/echo env-canary-57 env-canary-57"))
		_, err = m.Resolve(manifest.RunOptions{})
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err.Error()).To(ContainSubstring(`"Environ"`))
	})

	// As in CCM (the same Jet, v6.3.2): a name Jet does not know is an
	// error, not an empty string.
	It("refuses an undefined variable instead of rendering it empty", func() {
		write("resources.jet", "- exec:\n    - \"/bin/echo [[ Fact.host ]]\": {}\n")
		path := write("manifest.yaml", "ccm:\n  resources_jet_file: resources.jet\n")
		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		_, err = m.Resolve(manifest.RunOptions{})
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err.Error()).To(ContainSubstring(`ccm.resources_jet_file resources.jet`))
		Expect(err.Error()).To(ContainSubstring(`"Fact"`))
	})

	It("bounds what expressions write, not only the template's text", func() {
		write("big.txt", strings.Repeat("x", 700<<10))
		write("resources.jet", "- exec:\n    - \"/bin/echo [[ file(\"big.txt\") ]][[ file(\"big.txt\") ]]\": {}\n")
		path := write("manifest.yaml", "ccm:\n  resources_jet_file: resources.jet\n")
		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		_, err = m.Resolve(manifest.RunOptions{AllowFiles: true})
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err.Error()).To(ContainSubstring("renders more than"))
	})

	DescribeTable("refuses what CCM refuses",
		func(doc, problem string) {
			write("resources.jet", "- exec:\n    - /bin/true: {}\n")
			write("empty.jet", "[[ if false ]]x[[ end ]]\n")
			path := write("manifest.yaml", doc)
			m, err := manifest.Load(path)
			if err == nil {
				_, err = m.Resolve(manifest.RunOptions{})
			}
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("with resources too", "ccm:\n  resources_jet_file: resources.jet\n  resources: [{exec: [{/bin/true: {}}]}]\n", "cannot be used together"),
		Entry("outside the manifest's directory", "ccm:\n  resources_jet_file: ../resources.jet\n", "must name a file in the manifest's directory"),
		Entry("rendering nothing", "ccm:\n  resources_jet_file: empty.jet\n", "rendered nothing"),
		Entry("a missing file", "ccm:\n  resources_jet_file: nosuch.jet\n", "nosuch.jet"),
	)
})
