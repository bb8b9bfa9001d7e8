package providers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/apt"
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

	DescribeTable("gives the apt provider the package lock timeout",
		func(given, want time.Duration) {
			reg, err := providers.Builtin(providers.Options{PackageLockTimeout: given})
			Expect(err).NotTo(HaveOccurred())
			f, err := reg.Select(protocol.TypePackage, apt.ProviderName, map[string]any{"os": "debian"}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(f.(*apt.Factory).LockTimeout()).To(Equal(want))
		},
		Entry("none: the provider's default", time.Duration(0), apt.DefaultLockTimeout),
		Entry("30s", 30*time.Second, 30*time.Second),
	)
})
