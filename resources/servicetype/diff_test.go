package servicetype_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

var _ = Describe("service diffs", func() {
	DescribeTable("list state and enabled from -> to",
		func(ensure string, enable *bool, running, isEnabled, refresh bool, want []protocol.Change) {
			out, err := apply(resources.ApplyContext{Noop: true, Refresh: refresh}, props(ensure, enable), newFake(running, isEnabled))
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Diff.Changes).To(Equal(want))
		},
		Entry("start and enable", "running", ptr(enabled), false, false, false, []protocol.Change{
			{Field: "state", From: "stopped", To: "running"}, {Field: "enabled", From: "false", To: "true"},
		}),
		Entry("stop", "stopped", nil, true, true, false, []protocol.Change{{Field: "state", From: "running", To: "stopped"}}),
		Entry("disable only", "running", ptr(disabled), true, true, false, []protocol.Change{{Field: "enabled", From: "true", To: "false"}}),
		Entry("restart on refresh", "running", nil, true, false, true, []protocol.Change{{Field: "state", From: "running", To: "restarted"}}),
	)
})

func ptr(b bool) *bool { return &b }
