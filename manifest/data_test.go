package manifest_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources"
)

// hieraDoc has base data and overrides for an os and a role; merge is
// filled in by each entry.
const hieraDoc = `
data:
  motd: base
  packages: [curl]
  nginx: {workers: 1, gzip: false}
  only_base: yes
hierarchy:
  order: ["os:{{ lookup('facts.os') }}", "role:{{ lookup('facts.role', '') }}"]
  merge: %s
overrides:
  "os:rhel":
    motd: rhel
    packages: [policycoreutils]
    nginx: {workers: 2}
  "role:web":
    motd: web
    packages: [nginx]
    nginx: {gzip: true, workers: 8}
    role_only: 1
`

var _ = Describe("data resolution", func() {
	resolveData := func(merge string, facts map[string]any, extra map[string]any) (*manifest.Resolved, error) {
		m, err := manifest.Parse(fmt.Appendf(nil, hieraDoc, merge), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		return m.Resolve(manifest.RunOptions{Facts: facts, Data: extra})
	}

	DescribeTable("hierarchy: the order comes from facts; first takes the first match, deep merges all with later entries winning (as CCM)",
		func(merge string, facts map[string]any, wantKeys []string, want map[string]any) {
			r, err := resolveData(merge, facts, nil)
			Expect(err).ToNot(HaveOccurred())
			Expect(r.Hierarchy).To(Equal(wantKeys))
			Expect(r.Data).To(Equal(want))
		},
		Entry("first, no override matches: base data", "first",
			map[string]any{"os": "debian"}, []string(nil),
			map[string]any{"motd": "base", "packages": []any{"curl"}, "nginx": map[string]any{"workers": 1.0, "gzip": false}, "only_base": "yes"}),
		Entry("first, os only: each top-level key whole from the override", "first",
			map[string]any{"os": "rhel"}, []string{"os:rhel"},
			map[string]any{"motd": "rhel", "packages": []any{"policycoreutils"}, "nginx": map[string]any{"workers": 2.0}, "only_base": "yes"}),
		Entry("first, os and role: only the first match (os) is used", "first",
			map[string]any{"os": "rhel", "role": "web"}, []string{"os:rhel"},
			map[string]any{"motd": "rhel", "packages": []any{"policycoreutils"}, "nginx": map[string]any{"workers": 2.0}, "only_base": "yes"}),
		Entry("first, role only (os has no override)", "first",
			map[string]any{"os": "debian", "role": "web"}, []string{"role:web"},
			map[string]any{"motd": "web", "packages": []any{"nginx"}, "nginx": map[string]any{"gzip": true, "workers": 8.0}, "only_base": "yes", "role_only": 1.0}),
		Entry("deep, os and role: maps merge, lists concatenate, the later entry (role) wins", "deep",
			map[string]any{"os": "rhel", "role": "web"}, []string{"os:rhel", "role:web"},
			map[string]any{
				"motd":      "web",
				"packages":  []any{"curl", "policycoreutils", "nginx"},
				"nginx":     map[string]any{"workers": 8.0, "gzip": true},
				"only_base": "yes",
				"role_only": 1.0,
			}),
		Entry("deep, role only", "deep",
			map[string]any{"os": "debian", "role": "web"}, []string{"role:web"},
			map[string]any{"motd": "web", "packages": []any{"curl", "nginx"}, "nginx": map[string]any{"workers": 8.0, "gzip": true}, "only_base": "yes", "role_only": 1.0}),
	)

	It("merges --data deep over the resolved data", func() {
		r, err := resolveData("first", map[string]any{"os": "rhel"}, map[string]any{
			"motd": "cli", "packages": []any{"vim"}, "nginx": map[string]any{"gzip": true},
		})
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Data).To(Equal(map[string]any{
			"motd": "cli", "packages": []any{"policycoreutils", "vim"}, "nginx": map[string]any{"workers": 2.0, "gzip": true}, "only_base": "yes",
		}))
	})

	It("lets templates and conditions see the resolved data", func() {
		m, err := manifest.Parse([]byte(`
data: {motd: base}
hierarchy: {order: ["os:{{ lookup('facts.os') }}"]}
overrides: {"os:rhel": {motd: rhel}}
ccm:
  resources:
    - file: [{/tmp/x: {content: "{{ lookup('data.motd') }}"}}]
`), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		r, err := m.Resolve(manifest.RunOptions{Facts: map[string]any{"os": "rhel"}})
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Resources[0].Properties).To(HaveKeyWithValue("content", "rhel"))
	})

	It("does not give the hierarchy order the data", func() {
		m, err := manifest.Parse([]byte(`
data: {tier: gold}
hierarchy: {order: ["tier:{{ lookup('data.tier') }}"]}
`), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		_, err = m.Resolve(manifest.RunOptions{})
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err.Error()).To(HavePrefix(`hierarchy.order[0] "tier:{{ lookup('data.tier') }}": `))
		Expect(err.Error()).To(ContainSubstring("missing key"))
	})

	It("does not change the manifest's own data between runs", func() {
		r1, err := resolveData("deep", map[string]any{"os": "rhel", "role": "web"}, nil)
		Expect(err).ToNot(HaveOccurred())
		Expect(r1.Data["packages"]).To(HaveLen(3))
		m, err := manifest.Parse(fmt.Appendf(nil, hieraDoc, "deep"), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		for range 2 {
			r, err := m.Resolve(manifest.RunOptions{Facts: map[string]any{"os": "rhel", "role": "web"}})
			Expect(err).ToNot(HaveOccurred())
			Expect(r.Data["packages"]).To(Equal([]any{"curl", "policycoreutils", "nginx"}))
		}
	})
})
