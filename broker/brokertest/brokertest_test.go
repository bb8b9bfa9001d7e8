package brokertest_test

import (
	"fmt"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
)

// recordingTB is a hand-written brokertest.TB that keeps what it is told.
type recordingTB struct {
	dir      string
	cleanups []func()
	fatals   []string
}

func (r *recordingTB) Helper()          {}
func (r *recordingTB) TempDir() string  { return r.dir }
func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
}

func (r *recordingTB) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

var _ brokertest.TB = GinkgoT()

var _ = Describe("Start", func() {
	It("starts a broker on a random port with its store in the test's temp dir", func() {
		b := brokertest.Start(GinkgoT())
		Expect(b.ClientURL()).NotTo(Equal("nats://127.0.0.1:4222"))
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		Expect(nc.Status()).To(Equal(nats.CONNECTED))
	})

	It("registers a cleanup that shuts the broker down", func() {
		tb := &recordingTB{dir: GinkgoT().TempDir()}
		b := brokertest.Start(tb)
		Expect(tb.fatals).To(BeEmpty())
		Expect(b.StoreDir()).To(Equal(tb.dir))
		Expect(tb.cleanups).To(HaveLen(1))

		tb.runCleanups()
		Expect(tb.fatals).To(BeEmpty())
		Expect(b.ClientURL()).To(BeEmpty())
		Expect(tb.dir).To(BeADirectory(), "the temp dir belongs to the test, not to the broker")
	})

	It("fails the test when the broker cannot start", func() {
		tb := &recordingTB{dir: GinkgoT().TempDir()}
		b := brokertest.StartConfig(tb, broker.Config{Listen: "not-an-address"})
		Expect(b).To(BeNil())
		Expect(tb.fatals).To(ConsistOf(ContainSubstring(`listen "not-an-address"`)))
		Expect(tb.cleanups).To(BeEmpty())
	})

	It("uses the given configuration", func() {
		dir := GinkgoT().TempDir() + "/custom"
		b := brokertest.StartConfig(GinkgoT(), broker.Config{StoreDir: dir, ServerName: "custom"})
		Expect(b.StoreDir()).To(Equal(dir))
		Expect(dir).To(BeADirectory())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		Expect(nc.ConnectedServerName()).To(Equal("custom"))
	})
})
