package orchestrator

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("A discovery round's quiet window", func() {
	const quiet = 300 * time.Millisecond

	It("is quiet when nothing was received", func() {
		Expect((&inbox{}).quietFor(quiet)).To(BeZero())
	})

	It("is not quiet while received replies wait to be verified, however old", func() {
		in := &inbox{}
		in.arrived.Store(time.Now().Add(-time.Hour).UnixNano())
		in.pending.Add(1)
		Expect(in.quietFor(quiet)).To(Equal(quiet))
		in.pending.Add(-1)
		Expect(in.quietFor(quiet)).To(BeZero())
	})

	It("waits out the rest of the window after the last arrival", func() {
		in := &inbox{}
		in.arrived.Store(time.Now().Add(-100 * time.Millisecond).UnixNano())
		wait := in.quietFor(quiet)
		Expect(wait).To(BeNumerically(">", 0))
		Expect(wait).To(BeNumerically("<=", 200*time.Millisecond))
	})
})
