package main

import (
	"runtime"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ccm-orch version", func() {
	DescribeTable("prints the version, commit, build date and Go version",
		func(args ...string) {
			code, out, errOut := orch(args...)
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(Equal("version: development\ncommit: unknown\nbuilt: unknown\ngo: " + runtime.Version() + "\n"))
		},
		Entry("the version command", "version"),
		Entry("--version", "--version"),
	)
})
