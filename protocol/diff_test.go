package protocol_test

import (
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Diff", func() {
	reply := func(ev *protocol.TransactionEvent) []byte {
		r := protocol.NewFleetReply("req1abc", "web-01", time.Unix(0, 0))
		r.Events = append(r.Events, ev)
		b, err := json.Marshal(r)
		Expect(err).NotTo(HaveOccurred())
		return b
	}

	It("is optional on the wire: a reply without diffs decodes as before", func() {
		ev := protocol.NewTransactionEvent("e1", "file", "/etc/motd", "")
		b := reply(ev)
		Expect(string(b)).NotTo(ContainSubstring(`"diff"`))
		r, err := protocol.DecodeFleetReply(b, protocol.Limits{})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Events[0].Diff).To(BeNil())
	})

	It("round-trips through the strict decoder", func() {
		ev := protocol.NewTransactionEvent("e1", "scaffold", "/etc/app", "")
		ev.Diff = &protocol.Diff{
			Changes: []protocol.Change{{Field: "mode", From: "0600", To: "0644"}},
			Content: "--- a\n+++ b\n", Files: []protocol.FileDiff{{Path: "/etc/app/x", Content: "-a\n+b\n"}},
			Added: []string{"/etc/app/y"}, Purged: []string{"/etc/app/z"},
		}
		r, err := protocol.DecodeFleetReply(reply(ev), protocol.Limits{})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Events[0].Diff).To(Equal(ev.Diff))
	})

	It("redacts content and the values of content-bearing changes", func() {
		d := &protocol.Diff{
			Changes: []protocol.Change{{Field: "mode", From: "0600", To: "0644"}, {Field: "download", From: "", To: "https://x/secret"}},
			Content: "-old secret\n+new secret\n", Files: []protocol.FileDiff{{Path: "/a", Content: "-s\n"}},
		}
		d.Redact()
		Expect(d.Content).To(BeEmpty())
		Expect(d.Summary).To(Equal(protocol.DiffSensitive))
		Expect(d.Sensitive).To(BeTrue())
		Expect(d.Files).To(Equal([]protocol.FileDiff{{Path: "/a", Summary: protocol.DiffSensitive}}))
		Expect(d.Changes).To(Equal([]protocol.Change{{Field: "mode", From: "0600", To: "0644"}, {Field: "download", From: "", To: "[sensitive]"}}))
	})

	It("keeps a reply's diffs within a budget, in event order", func() {
		r := protocol.NewFleetReply("req1abc", "web-01", time.Unix(0, 0))
		for range 3 {
			ev := protocol.NewTransactionEvent("e", "file", "/f", "")
			ev.Diff = &protocol.Diff{Content: strings.Repeat("x", 100), Changes: []protocol.Change{{Field: "mode", From: "1", To: "2"}}}
			r.Events = append(r.Events, ev)
		}
		r.CapDiffs(250)
		Expect(r.Events[0].Diff.Content).To(HaveLen(100))
		Expect(r.Events[1].Diff.Content).To(HaveLen(100))
		Expect(r.Events[2].Diff.Content).To(BeEmpty())
		Expect(r.Events[2].Diff.Summary).To(Equal(protocol.DiffLeftOut))
		Expect(r.Events[2].Diff.Changes).To(HaveLen(1))
	})

	DescribeTable("RedactSensitive",
		func(in, want map[string]any) { Expect(protocol.RedactSensitive(in)).To(Equal(want)) },
		Entry("not sensitive: unchanged", map[string]any{"name": "/f", "content": "x"}, map[string]any{"name": "/f", "content": "x"}),
		Entry("sensitive: content hidden, attributes kept",
			map[string]any{"name": "/f", "content": "x", "mode": "0600", "sensitive": true, "source": ""},
			map[string]any{"name": "/f", "content": "[sensitive]", "mode": "0600", "sensitive": true, "source": ""}),
	)
})
