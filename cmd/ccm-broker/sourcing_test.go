package main

import (
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = DescribeTable("sourceDomain names the site a hub's source reads from",
	func(src *jetstream.StreamSourceInfo, want string) {
		Expect(sourceDomain(src)).To(Equal(want))
	},
	Entry("a site's domain", &jetstream.StreamSourceInfo{Name: "CCM_HISTORY", External: &jetstream.ExternalStream{APIPrefix: "$JS.fra1.API"}}, "fra1"),
	Entry("a local source", &jetstream.StreamSourceInfo{Name: "CCM_HISTORY"}, ""),
	Entry("another account's API prefix", &jetstream.StreamSourceInfo{Name: "X", External: &jetstream.ExternalStream{APIPrefix: "$JS.other.account"}}, ""),
	Entry("no source", nil, ""),
)
