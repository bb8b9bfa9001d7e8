package main

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt/apttest"
)

var _ = Describe("ccm-agent ensure package of a package that does not exist", func() {
	It("fails the noop, saying apt has no such package, instead of predicting an install", Label("real"), func() {
		if reason, ok := apttest.Available(); !ok {
			Skip(reason)
		}
		code, out, errOut := agent("--debug", "ensure", "package", "nosuchpkg-xyz", "--noop")
		Expect(code).To(Equal(2), errOut)
		Expect(out).To(ContainSubstring("package#nosuchpkg-xyz failed: package nosuchpkg-xyz: cannot install: no such package nosuchpkg-xyz: apt knows no package of that name"))
		Expect(out).NotTo(ContainSubstring("Would have installed"))
		Expect(errOut).To(ContainSubstring(`command="apt-cache `))
		Expect(errOut).NotTo(ContainSubstring(`command="apt-get `))
	})
})

var _ = Describe("ccm-agent ensure of a typo'd type", func() {
	It("names the nearest type and the valid ones", func() {
		code, out, errOut := agent("ensure", "pakage", "nginx")
		Expect(code).To(Equal(1))
		Expect(out).To(BeEmpty())
		Expect(errOut).To(Equal(`ccm-agent: error: unknown resource type "pakage"; did you mean "package"? valid: archive, exec, file, group, package, scaffold, service, user (ensure also takes: api)` + "\n"))
	})
})
