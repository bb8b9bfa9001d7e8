package jsstore_test

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// nats-server caps a stream that sets no consumer limit at 1,000
// consumers; every agent holds a watch on the assignment bucket, so a
// fleet of more than 1,000 hosts found its 1,001st agent unable to watch
// (the 20,000-agent bench run of speed round 3).
var _ = Describe("The consumer limit of the fleet's streams", func() {
	const watchers = 1_100

	It("lets more agents than nats-server's default 1,000 consumers watch the assignment bucket", func(ctx SpecContext) {
		js := newJS()
		kv, err := jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).NotTo(HaveOccurred())
		for i := range watchers {
			w, err := kv.WatchAll(ctx)
			Expect(err).NotTo(HaveOccurred(), "watch %d", i+1)
			DeferCleanup(func() { _ = w.Stop() })
		}
	})

	It("is raised on a bucket that existed before, as history init provisions it again", func(ctx SpecContext) {
		js := newJS()
		_, err := js.CreateKeyValue(ctx, jsstore.AssignmentsConfig{}.KeyValueConfig())
		Expect(err).NotTo(HaveOccurred())
		Expect(maxConsumers(ctx, js, "KV_"+protocol.AssignmentsBucket)).To(BeNumerically("<", jsstore.FleetMaxConsumers))

		_, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).NotTo(HaveOccurred())
		Expect(maxConsumers(ctx, js, "KV_"+protocol.AssignmentsBucket)).To(Equal(jsstore.FleetMaxConsumers))
		_, err = jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{})
		Expect(err).NotTo(HaveOccurred())
		Expect(maxConsumers(ctx, js, "KV_"+protocol.NodesBucket)).To(Equal(jsstore.FleetMaxConsumers))
		_, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).NotTo(HaveOccurred())
		Expect(maxConsumers(ctx, js, protocol.HistoryStream)).To(Equal(jsstore.FleetMaxConsumers))
	})

	It("leaves a bucket created without the raise capped at 1,000, which is why provisioning raises it", func(ctx SpecContext) {
		js := newJS()
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "CONTROL"})
		Expect(err).NotTo(HaveOccurred())
		var refused error
		for range watchers {
			w, err := kv.WatchAll(ctx)
			if err != nil {
				refused = err
				break
			}
			DeferCleanup(func() { _ = w.Stop() })
		}
		Expect(refused).To(MatchError(ContainSubstring("maximum consumers limit reached")))
	})
})

func maxConsumers(ctx context.Context, js jetstream.JetStream, stream string) int {
	GinkgoHelper()
	s, err := js.Stream(ctx, stream)
	Expect(err).NotTo(HaveOccurred())
	return s.CachedInfo().Config.MaxConsumers
}
