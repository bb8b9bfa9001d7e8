package agent

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("shrinkReply", func() {
	// reply has count file events, each with properties of size bytes;
	// every tenth changed, the first failed.
	reply := func(count, size int) *protocol.FleetReply {
		r := protocol.NewFleetReply("req-1", "web1", time.Now())
		for i := range count {
			ev := protocol.NewTransactionEvent(fmt.Sprint(i), "file", fmt.Sprintf("/srv/f%d", i), "")
			ev.Properties = map[string]any{"content": strings.Repeat("x", size)}
			ev.Changed = i%10 == 0
			ev.Failed = i == 1
			r.Events = append(r.Events, ev)
		}
		return r
	}
	decode := func(data []byte) *protocol.FleetReply {
		GinkgoHelper()
		r, err := protocol.DecodeFleetReply(data, protocol.Limits{MaxBytes: 64 << 20})
		Expect(err).NotTo(HaveOccurred())
		return r
	}

	It("leaves a reply within the limit as it is", func() {
		r := reply(10, 100)
		want, err := r.Encode()
		Expect(err).NotTo(HaveOccurred())
		data, what, err := shrinkReply(r, 1<<20)
		Expect(err).NotTo(HaveOccurred())
		Expect(what).To(BeEmpty())
		Expect(data).To(Equal(want))
	})

	It("drops the properties of the stable resources first, keeping every resource's event", func() {
		data, what, err := shrinkReply(reply(100, 10000), 200000)
		Expect(err).NotTo(HaveOccurred())
		Expect(what).To(ContainSubstring("stable"))
		Expect(len(data)).To(BeNumerically("<=", 200000))
		r := decode(data)
		Expect(r.Events).To(HaveLen(100))
		Expect(r.Events[0].Properties).NotTo(BeNil(), "a change keeps its properties")
		Expect(r.Events[1].Properties).NotTo(BeNil(), "a failure keeps its properties")
		Expect(r.Events[2].Properties).To(BeNil())
	})

	It("then drops every resource's, and at last the events, saying too_large with the counts", func() {
		data, what, err := shrinkReply(reply(100, 10000), 60000)
		Expect(err).NotTo(HaveOccurred())
		Expect(what).To(ContainSubstring("every resource"))
		Expect(decode(data).Events).To(HaveLen(100))

		data, what, err = shrinkReply(reply(100, 10000), 1000)
		Expect(err).NotTo(HaveOccurred())
		Expect(what).To(Equal("dropped every event"))
		r := decode(data)
		Expect(r.Events).To(BeEmpty())
		Expect(r.Error.Code).To(Equal(protocol.CodeTooLarge))
		Expect(r.Error.Message).To(ContainSubstring("100 resources (10 changed, 1 failed)"))
	})
})
