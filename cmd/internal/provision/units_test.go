package provision_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/cmd/internal/provision"
)

func TestProvision(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "provision Suite")
}

var _ = DescribeTable("sizes and ages on the command line",
	func(in string, size int64, age time.Duration) {
		if size != 0 {
			Expect(provision.ParseSize(in)).To(Equal(size))
		}
		if age != 0 {
			Expect(provision.ParseAge(in)).To(Equal(age))
		}
	},
	Entry("bytes", "1048576", int64(1<<20), time.Duration(0)),
	Entry("binary units", "10GiB", int64(10<<30), time.Duration(0)),
	Entry("decimal units", "500MB", int64(500_000_000), time.Duration(0)),
	Entry("no limit", "-1", int64(-1), time.Duration(0)),
	Entry("days", "30d", int64(0), 30*24*time.Hour),
	Entry("hours", "24h", int64(0), 24*time.Hour),
	Entry("half a day", "0.5d", int64(0), 12*time.Hour),
)

var _ = It("refuses sizes and ages that do not parse", func() {
	for _, s := range []string{"", "0", "ten", "-5", "5XB"} {
		_, err := provision.ParseSize(s)
		Expect(err).To(HaveOccurred(), s)
	}
	for _, s := range []string{"", "0s", "-1h", "d", "1w"} {
		_, err := provision.ParseAge(s)
		Expect(err).To(HaveOccurred(), s)
	}
	Expect(provision.FormatAge(30 * 24 * time.Hour)).To(Equal("30d"))
	Expect(provision.FormatAge(90 * time.Minute)).To(Equal(fmt.Sprint(90 * time.Minute)))
})
