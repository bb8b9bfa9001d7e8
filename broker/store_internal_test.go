package broker

import (
	"bytes"
	"log/slog"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("storeLimit", func() {
	const mib = 1 << 20
	DescribeTable("chooses the JetStream store limit from the space available",
		func(configured int64, available uint64, want int64, why string) {
			limit, reason := storeLimit(configured, available)
			Expect(limit).To(Equal(want))
			Expect(reason).To(ContainSubstring(why))
		},
		Entry("not configured: 75% of the space", int64(0), uint64(100*mib), int64(75*mib), "75% of the 104857600 bytes available"),
		Entry("not configured, a tiny disk", int64(0), uint64(4), int64(3), "75%"),
		Entry("configured within the space", int64(10*mib), uint64(100*mib), int64(10*mib), "configured"),
		Entry("configured beyond the space: capped", int64(200*mib), uint64(100*mib), int64(100*mib), "capped"),
		Entry("no space at all", int64(0), uint64(0), int64(0), "75%"),
	)
})

var _ = Describe("noteStoreUsage", func() {
	It("warns once per crossing of 90% and says when usage is back under", func() {
		var buf bytes.Buffer
		b := &Broker{log: slog.New(slog.NewTextHandler(&buf, nil))}
		high := false
		for _, used := range []int64{50, 89, 91, 95, 99, 80, 92} {
			high = b.noteStoreUsage(high, used, 100)
		}
		Expect(high).To(BeTrue())
		out := buf.String()
		Expect(strings.Count(out, "store nearly full")).To(Equal(2), out)
		Expect(strings.Count(out, "back under the warning level")).To(Equal(1), out)
		Expect(out).To(ContainSubstring("percent=91"))
		b.noteStoreUsage(false, 10, 0)
		Expect(strings.Count(buf.String(), "store nearly full")).To(Equal(2), "no limit, no warning")
	})
})
