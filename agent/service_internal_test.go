package agent

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = DescribeTable("serviceVersion gives NATS micro a semantic version",
	func(in, want string) { Expect(serviceVersion(in)).To(Equal(want)) },
	Entry("a release", "1.4.0", "1.4.0"),
	Entry("a tag with v", "v1.4.0", "1.4.0"),
	Entry("a pre-release", "v1.4.0-rc.1", "1.4.0-rc.1"),
	Entry("git describe", "v1.4.0-3-g3b2d972-dirty", "1.4.0-3-g3b2d972-dirty"),
	Entry("a commit", "3b2d972-dirty", "0.0.0+3b2d972-dirty"),
	Entry("development", "development", "0.0.0+development"),
	Entry("nothing usable", "%%%", "0.0.0"),
)
