package natsconn_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/natsconn"
)

var _ = Describe("ConnectRetry", func() {
	var ctx context.Context

	BeforeEach(func() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		DeferCleanup(cancel)
		useConfigHome()
	})

	It("keeps trying until a server listens, logging the failures once per interval", func() {
		addr := freeAddr()
		logs := gbytes.NewBuffer()
		log := slog.New(slog.NewTextHandler(logs, nil))
		type result struct{ err error }
		done := make(chan result, 1)
		go func() {
			defer GinkgoRecover()
			nc, err := natsconn.ConnectRetry(ctx, natsconn.Options{Servers: "nats://" + addr, Logger: log})
			if nc != nil {
				nc.Close()
			}
			done <- result{err: err}
		}()
		Eventually(logs).Should(gbytes.Say(`level=WARN msg="NATS not reachable; retrying".*failed_attempts=1`))
		// Several attempts fail within the first seconds (250ms, 500ms,
		// 1s…), yet only the first is logged until 30s have passed.
		Consistently(done, 2*time.Second).ShouldNot(Receive())
		Expect(strings.Count(string(logs.Contents()), "NATS not reachable")).To(Equal(1))

		brokertest.StartConfig(GinkgoT(), broker.Config{Listen: addr})
		var r result
		Eventually(done).WithTimeout(30 * time.Second).Should(Receive(&r))
		Expect(r.err).NotTo(HaveOccurred())
		Expect(logs).To(gbytes.Say(`level=INFO msg="NATS reachable after retrying" attempts=\d+`))
	})

	It("gives up when ctx is done, wrapping ErrConnect and ctx's error", func() {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		nc, err := natsconn.ConnectRetry(cctx, natsconn.Options{Servers: "nats://" + freeAddr()})
		Expect(nc).To(BeNil())
		Expect(err).To(MatchError(natsconn.ErrConnect))
		Expect(err).To(MatchError(context.Canceled))
		Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
	})

	It("does not retry what retrying cannot cure", func() {
		dir := GinkgoT().TempDir()
		bad := filepath.Join(dir, "bad.creds")
		Expect(os.WriteFile(bad, []byte("not creds"), 0o600)).To(Succeed())
		_, err := natsconn.ConnectRetry(ctx, natsconn.Options{Servers: "nats://" + freeAddr(), Creds: bad})
		Expect(err).To(MatchError(natsconn.ErrCredentials))
		_, err = natsconn.ConnectRetry(ctx, natsconn.Options{Context: "missing"})
		Expect(err).To(MatchError(natsconn.ErrContext))
	})

	DescribeTable("waits between half and all of the delay, doubling from 250ms to 30s",
		func(attempts int, lo, hi time.Duration) {
			for range 200 {
				Expect(natsconn.RetryDelay(attempts)).To(And(BeNumerically(">=", lo), BeNumerically("<=", hi)))
			}
		},
		Entry("after the first failure", 1, 125*time.Millisecond, 250*time.Millisecond),
		Entry("after the third", 3, 500*time.Millisecond, time.Second),
		Entry("after the eighth (capped)", 8, 15*time.Second, 30*time.Second),
		Entry("after many", 1000, 15*time.Second, 30*time.Second),
	)
})
