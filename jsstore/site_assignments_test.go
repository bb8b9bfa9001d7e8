package jsstore_test

import (
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// A site broker's assignment bucket mirrors the hub's, so an assignment
// stored at the hub reaches the site's agents and stays there while the
// hub is away. The hub itself is not needed here: a mirror whose origin
// cannot be reached yet is still made, and fills once it can.
var _ = Describe("The assignment bucket at a site", func() {
	const stream = "KV_" + protocol.AssignmentsBucket
	config := func(ctx SpecContext, js jetstream.JetStream) jetstream.StreamConfig {
		GinkgoHelper()
		s, err := js.Stream(ctx, stream)
		Expect(err).NotTo(HaveOccurred())
		return s.CachedInfo().Config
	}

	It("is made as a mirror of the hub's, republishing what it stores, and refuses writes naming the hub", func(ctx SpecContext) {
		js := newJS()
		_, err := jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{Hub: "hub"})
		Expect(err).NotTo(HaveOccurred())
		cfg := config(ctx, js)
		Expect(cfg.Mirror).NotTo(BeNil())
		Expect(cfg.Mirror.Name).To(Equal(stream))
		Expect(cfg.Mirror.External.APIPrefix).To(Equal("$JS.hub.API"))
		Expect(cfg.RePublish).NotTo(BeNil())
		Expect(cfg.RePublish.Destination).To(Equal(protocol.AssignmentChangeSubjects))

		_, err = jsstore.OpenAssignmentsToWrite(ctx, js)
		Expect(err).To(MatchError(jsstore.ErrAssignmentsMirror))
		Expect(err).To(MatchError(ContainSubstring("(domain hub): store and remove assignments with a ccm-orch connected to the hub")))
		_, err = jsstore.OpenAssignments(ctx, js)
		Expect(err).NotTo(HaveOccurred(), "readers use the mirror")
	})

	It("stays a mirror when provisioned again without the hub (ccm-orch history init at the site)", func(ctx SpecContext) {
		js := newJS()
		_, err := jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{Hub: "hub"})
		Expect(err).NotTo(HaveOccurred())
		_, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).NotTo(HaveOccurred())
		Expect(config(ctx, js).Mirror).NotTo(BeNil())
	})

	It("replaces an empty bucket of the site's own with the mirror", func(ctx SpecContext) {
		js := newJS()
		_, err := jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).NotTo(HaveOccurred())
		Expect(config(ctx, js).Mirror).To(BeNil())
		_, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{Hub: "hub"})
		Expect(err).NotTo(HaveOccurred())
		Expect(config(ctx, js).Mirror).NotTo(BeNil())
	})

	It("keeps a bucket of the site's own that holds assignments, and says what to do", func(ctx SpecContext) {
		js := newJS()
		kv, err := jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).NotTo(HaveOccurred())
		_, err = kv.Put(ctx, "motd", []byte("the site's own"))
		Expect(err).NotTo(HaveOccurred())

		_, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{Hub: "hub"})
		Expect(err).To(MatchError(jsstore.ErrSiteAssignments))
		Expect(err).To(MatchError(ContainSubstring("it holds assignments stored at this site (stream messages: 1), which its agents keep following; to follow the hub's, move them to the hub and delete this bucket (nats kv del CCM_ASSIGNMENTS)")))
		Expect(config(ctx, js).Mirror).To(BeNil())
		e, err := kv.Get(ctx, "motd")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(e.Value())).To(Equal("the site's own"))
	})
})

var _ = Describe("The assignment bucket's republish", func() {
	It("is added when the bucket is provisioned again, if an earlier release made it without", func(ctx SpecContext) {
		js := newJS()
		old := jsstore.AssignmentsConfig{}.KeyValueConfig()
		old.RePublish = nil
		_, err := js.CreateKeyValue(ctx, old)
		Expect(err).NotTo(HaveOccurred())
		before, err := js.Stream(ctx, "KV_"+protocol.AssignmentsBucket)
		Expect(err).NotTo(HaveOccurred())
		Expect(before.CachedInfo().Config.RePublish).To(BeNil())
		_, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).NotTo(HaveOccurred())
		s, err := js.Stream(ctx, "KV_"+protocol.AssignmentsBucket)
		Expect(err).NotTo(HaveOccurred())
		rp := s.CachedInfo().Config.RePublish
		Expect(rp).NotTo(BeNil())
		Expect(rp.Destination).To(Equal(protocol.AssignmentChangeSubjects))
	})
})
