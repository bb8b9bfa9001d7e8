package manifest_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// registerDoc is a manifest whose file resource carries entry as its
// register_when_stable list.
func registerDoc(entry string) string {
	return "data: {port: \"8080\"}\nccm:\n  resources:\n    - file:\n        - /srv/www/index.html:\n            ensure: present\n            content: hi\n            owner: root\n            group: root\n            mode: \"0644\"\n            register_when_stable:\n              - " + entry + "\n"
}

var _ = Describe("register_when_stable", func() {
	It("is a common property: parsed, templated and decoded like the others", func() {
		r := resolve(registerDoc("{cluster: prod, service: web, protocol: http, address: \"{{ lookup('facts.ip') }}\", port: \"{{ lookup('data.port') }}\", priority: 5, ttl: 1m, annotations: {zone: a}}"), map[string]any{"ip": "10.1.2.3"})
		Expect(r.Resources).To(HaveLen(1))
		props, err := engine.Decode(filetype.Type{}, r.Resources[0].Properties)
		Expect(err).ToNot(HaveOccurred())
		Expect(props.Common().RegisterWhenStable).To(Equal([]resources.Registration{{
			Cluster: "prod", Service: "web", Protocol: "http", Address: "10.1.2.3",
			Port: 8080, Priority: 5, TTL: "1m", Annotations: map[string]string{"zone": "a"},
		}}))
	})

	It("refuses a misspelt property of the resource, naming it", func() {
		doc := "ccm:\n  resources:\n    - file:\n        - /srv/www/index.html:\n            ensure: present\n            register_when_stabel: []\n"
		_, err := manifest.Parse([]byte(doc), manifest.ParseOptions{})
		Expect(err).To(MatchError(ContainSubstring(`unknown property "register_when_stabel"`)))
	})

	It("refuses a misspelt key of an entry, naming it", func() {
		r := resolve(registerDoc("{cluster: prod, servce: web, protocol: http, address: 10.0.0.1}"), nil)
		_, err := engine.Decode(filetype.Type{}, r.Resources[0].Properties)
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err).To(MatchError(ContainSubstring("servce")))
	})

	It("refuses an entry without a service and a port that is not a number", func() {
		r := resolve(registerDoc("{cluster: prod, protocol: http, address: 10.0.0.1}"), nil)
		_, err := engine.Decode(filetype.Type{}, r.Resources[0].Properties)
		Expect(err).To(MatchError(ContainSubstring("register_when_stable[0]: cluster, service, protocol and address are required")))
		r = resolve(registerDoc("{cluster: prod, service: web, protocol: http, address: 10.0.0.1, port: eighty}"), nil)
		_, err = engine.Decode(filetype.Type{}, r.Resources[0].Properties)
		Expect(err).To(MatchError(ContainSubstring("is not a number")))
	})
})
