package protocol_test

import (
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("History records", func() {
	It("round-trips a request record", func() {
		f, err := protocol.NewFilter([]string{"os=debian"}, []string{"web1"})
		Expect(err).NotTo(HaveOccurred())
		e, err := protocol.NewEnsureRequest("exec", map[string]any{"name": "/bin/true"})
		Expect(err).NotTo(HaveOccurred())
		in := protocol.HistoryRequest{
			Protocol: protocol.HistoryRequestProtocol, RequestID: "abc", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Sender: "ops@box", Filter: f, Discovery: protocol.DiscoveryRegistry, Expected: []string{"web1"},
			Timeout: protocol.Duration(10 * time.Second), TTL: protocol.Duration(time.Minute), Ensure: e,
		}
		b, err := json.Marshal(&in)
		Expect(err).NotTo(HaveOccurred())
		out, err := protocol.DecodeHistoryRequest(b, protocol.Limits{})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Expected).To(Equal(in.Expected))
		Expect(out.Timeout).To(Equal(in.Timeout))
		Expect(out.Filter.Match(map[string]any{"identity": "web1", "os": "debian"})).To(BeTrue())
	})

	It("keeps the expected set of a run larger than a request's target list (a 20,000-host run), up to MaxExpected", func() {
		rec := protocol.HistoryRequest{Protocol: protocol.HistoryRequestProtocol, RequestID: "big", Created: time.Now().UTC()}
		for i := range 20000 {
			rec.Expected = append(rec.Expected, fmt.Sprintf("sim-%05d", i))
		}
		b, err := json.Marshal(&rec)
		Expect(err).NotTo(HaveOccurred())
		out, err := protocol.DecodeHistoryRequest(b, protocol.Limits{MaxBytes: 8 << 20})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Expected).To(HaveLen(20000))

		for i := 20000; i <= protocol.MaxExpected; i++ {
			rec.Expected = append(rec.Expected, fmt.Sprintf("sim-%06d", i))
		}
		b, err = json.Marshal(&rec)
		Expect(err).NotTo(HaveOccurred())
		_, err = protocol.DecodeHistoryRequest(b, protocol.Limits{MaxBytes: 8 << 20})
		Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf(`field "expected": %d identities, the limit is %d`, protocol.MaxExpected+1, protocol.MaxExpected))))
	})

	DescribeTable("refuses a request record that is not one",
		func(doc, problem string) {
			_, err := protocol.DecodeHistoryRequest([]byte(doc), protocol.Limits{})
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("another protocol", `{"protocol":"x","request_id":"a"}`, `field "protocol"`),
		Entry("a bad request id", `{"protocol":"io.choria.ccm.v1.fleet.history.request","request_id":"a b"}`, `field "request_id"`),
		Entry("a bad identity", `{"protocol":"io.choria.ccm.v1.fleet.history.request","request_id":"a","expected":["-x"]}`, `field "expected[0]"`),
		Entry("an unknown field", `{"protocol":"io.choria.ccm.v1.fleet.history.request","request_id":"a","extra":1}`, `extra`),
	)

	It("names message ids after the request and the host", func() {
		Expect(protocol.HistoryMsgID("r1", "web1")).To(Equal("r1/web1"))
		Expect(protocol.HistoryMsgID("r1", "")).To(Equal("r1/_request"))
	})

	It("reads timing headers, zero when absent or invalid", func() {
		t := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
		Expect(protocol.ParseHeaderTime(protocol.FormatHeaderTime(t))).To(Equal(t))
		Expect(protocol.ParseHeaderTime("")).To(BeZero())
		Expect(protocol.ParseHeaderTime("yesterday")).To(BeZero())
	})
})

var _ = Describe("Node records", func() {
	DescribeTable("decode strictly",
		func(doc, problem string) {
			r, err := protocol.DecodeNodeRecord([]byte(doc), protocol.Limits{})
			if problem == "" {
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Identity).To(Equal("web1"))
				return
			}
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("a good one", `{"protocol":"io.choria.ccm.v1.fleet.node","identity":"web1","facts":{"os":"debian"},"started":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z"}`, ""),
		Entry("another protocol", `{"protocol":"x","identity":"web1"}`, `field "protocol"`),
		Entry("a bad identity", `{"protocol":"io.choria.ccm.v1.fleet.node","identity":"web 1"}`, `field "identity"`),
	)
})
