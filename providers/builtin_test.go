package providers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/providers"
)

var _ = Describe("Builtin", func() {
	It("registers exactly the providers manifest.BuiltinProviders lists, which ccm-orch checks provider: against", func() {
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).NotTo(HaveOccurred())
		got := map[string][]string{}
		for _, t := range reg.TypeNames() {
			got[t] = reg.ProviderNames(t)
		}
		Expect(got).To(Equal(manifest.BuiltinProviders()))
	})
})
