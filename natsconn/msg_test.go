package natsconn_test

import (
	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/natsconn"
)

var _ = Describe("NewMsg", func() {
	It("sets the subject, reply, header and data it is given", func() {
		h := nats.Header{"Ccm-Signer": []string{"UABC"}}
		m := natsconn.NewMsg("ccm.req.web1", "_INBOX.x", h, []byte("body"))
		Expect(m.Subject).To(Equal("ccm.req.web1"))
		Expect(m.Reply).To(Equal("_INBOX.x"))
		Expect(m.Header.Get("Ccm-Signer")).To(Equal("UABC"))
		Expect(m.Data).To(Equal([]byte("body")))
	})

	It("keeps an empty header when given none, so nothing is sent as headers", func() {
		m := natsconn.NewMsg("s", "", nil, nil)
		Expect(m.Header).NotTo(BeNil())
		Expect(m.Header).To(BeEmpty())
		Expect(m.Reply).To(BeEmpty())
	})
})
