package manifest_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
)

var _ = Describe("Declared", func() {
	It("lists resources as declared: in order, one per name of a list, names unexpanded", func() {
		m, err := manifest.Parse([]byte(`
ccm:
  resources:
    - file:
        - defaults: {owner: root, group: root, mode: "0644"}
        - "/srv/{{ lookup('facts.identity') }}": {ensure: directory}
        - /etc/motd: {content: hi}
    - package:
        name: [zsh, vim]
    - service:
        name: nginx
`), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		Expect(m.Declared()).To(Equal([]manifest.Declared{
			{Type: "file", Name: "/srv/{{ lookup('facts.identity') }}"},
			{Type: "file", Name: "/etc/motd"},
			{Type: "package", Name: "zsh"},
			{Type: "package", Name: "vim"},
			{Type: "service", Name: "nginx"},
		}))
	})
})
