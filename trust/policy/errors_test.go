package policy_test

import (
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/trust/policy"
)

var _ = Describe("Policy errors", func() {
	It("names a bad key once, in the policy's words, from the typed signer error", func() {
		_, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: UNOTAKEY\n    allow: [file]\n"))
		Expect(err).To(MatchError(policy.ErrPolicy))
		Expect(err.Error()).To(HaveSuffix(`signers[0] ops: public_key: "UNOTAKEY" is not an nkeys user public key`))
		Expect(err.Error()).ToNot(ContainSubstring("invalid signer"))
	})

	It("names a bad rule once, in the policy's words, from the typed rule error", func() {
		_, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + userKey() + "\n    allow: [exec]\n    exec:\n      commands: [\"bash **\"]\n"))
		Expect(err).To(MatchError(policy.ErrPolicy))
		Expect(err.Error()).To(ContainSubstring(`signers[0] ops: exec.commands[0] "bash **"`))
		Expect(err.Error()).ToNot(ContainSubstring("invalid scope rule"))
	})

	DescribeTable("ManifestMessage says once that an error is about the manifest",
		func(err error, want string) { Expect(policy.ManifestMessage(err)).To(Equal(want)) },
		Entry("a document error names it already", func() error {
			_, err := manifest.Parse([]byte("[1]\n"), manifest.ParseOptions{})
			return err
		}(), "manifest: expected an object, got array"),
		Entry("a bundle error names it already", fmt.Errorf("%w: no manifest", manifest.ErrBundle), "bad manifest bundle: no manifest"),
		Entry("an error about one resource gets the manifest in front", errors.New(`resources[0] file#/x: mode "0888" is not octal`), `manifest: resources[0] file#/x: mode "0888" is not octal`),
	)
})
