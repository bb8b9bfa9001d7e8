package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// Issue 39, finding 3: a plain client of a site broker reached the hub's
// JetStream API through the domain `hub` across the leaf connection, and
// put a key into the hub's assignments (which every site mirrors), purged
// its history and deleted its registry. The hub's leaf users are an
// allow-list now (broker.LeafPermissions): what the mirrors, the sources
// and the fleet's traffic need, nothing else.
var _ = Describe("A hub that sites cannot touch", func() {
	It("keeps mirroring and sourcing, and refuses a site broker's client every other use of the hub's JetStream", func() {
		hub := startHub("fra1", "ams1")
		fra := startSite("fra1", hub)
		ams := startSite("ams1", hub)
		Eventually(hub.LeafConnections).Should(Equal(2))

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		fraJS := provision(fra.ClientURL())
		provision(ams.ClientURL())
		hubJS := provision(hub.ClientURL(), "fra1", "ams1")
		hubKV, err := jsstore.EnsureAssignments(ctx, hubJS, jsstore.AssignmentsConfig{})
		Expect(err).NotTo(HaveOccurred())
		_, err = jsstore.EnsureAssignments(ctx, fraJS, jsstore.AssignmentsConfig{Hub: broker.DefaultHubDomain})
		Expect(err).NotTo(HaveOccurred())

		// What sites need still crosses: the hub's assignments reach the
		// site's mirror, the site's history and registry reach the hub.
		_, err = hubKV.Put(ctx, "motd", []byte(`{"from":"the hub"}`))
		Expect(err).NotTo(HaveOccurred())
		fraKV, err := fraJS.KeyValue(ctx, protocol.AssignmentsBucket)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error { _, err := fraKV.Get(ctx, "motd"); return err }).WithTimeout(30 * time.Second).Should(Succeed())
		id := "r-leaf-allow"
		_, err = jsstore.Publish(ctx, fraJS, protocol.HistorySubject(id, "web1"), protocol.HistoryMsgID(id, "web1"), nil, []byte(`{"identity":"web1"}`))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() uint64 {
			return subjectCount(hubJS, protocol.HistoryStream, protocol.HistorySubject(id, "web1"))
		}).WithTimeout(30 * time.Second).Should(Equal(uint64(1)))
		fraNodes, err := fraJS.KeyValue(ctx, protocol.NodesBucket)
		Expect(err).NotTo(HaveOccurred())
		_, err = fraNodes.Put(ctx, "web1", []byte(`{"identity":"web1"}`))
		Expect(err).NotTo(HaveOccurred())
		hubNodes, err := hubJS.KeyValue(ctx, protocol.NodesBucket)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error { _, err := hubNodes.Get(ctx, "web1"); return err }).WithTimeout(30 * time.Second).Should(Succeed())
		// Requests from the hub reach a site's agents, and their replies
		// come back.
		agent := connect(fra.ClientURL())
		_, err = agent.Subscribe(protocol.RequestSubjectAll, func(m *nats.Msg) { _ = m.Respond([]byte("pong")) })
		Expect(err).NotTo(HaveOccurred())
		Expect(agent.Flush()).To(Succeed())
		orch := connect(hub.ClientURL())
		Eventually(func() (string, error) {
			m, err := orch.Request(protocol.RequestSubjectAll, []byte("ping"), 500*time.Millisecond)
			if err != nil {
				return "", err
			}
			return string(m.Data), nil
		}).Should(Equal("pong"))

		historyMsgs := streamMsgs(hubJS, protocol.HistoryStream)
		Expect(historyMsgs).To(BeNumerically(">=", 1))
		assignmentMsgs := streamMsgs(hubJS, "KV_"+protocol.AssignmentsBucket)

		// A plain client of the site broker, against the hub's domain.
		// Every attempt is made; those that got through are listed.
		plain := connect(fra.ClientURL())
		var through []string
		refused := func(subject string, body []byte) {
			m, err := plain.Request(subject, body, 2*time.Second)
			if err != nil {
				if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
					through = append(through, subject+": "+err.Error())
				}
				return
			}
			// An answer is acceptable only as the JetStream API's
			// refusal.
			var resp struct {
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if json.Unmarshal(m.Data, &resp) != nil || resp.Error == nil {
				through = append(through, subject+" answered "+string(m.Data))
			}
		}
		// (a) a put into the hub's assignments: through the domain (what
		// nats.go does for a bucket of another domain), and raw.
		refused("$JS.hub.API.$KV."+protocol.AssignmentsBucket+".canary-a", []byte(`{"canary":"a"}`))
		refused("$KV."+protocol.AssignmentsBucket+".canary-raw", []byte(`{"canary":"raw"}`))
		hubDomain, err := jetstream.NewWithDomain(plain, broker.DefaultHubDomain)
		Expect(err).NotTo(HaveOccurred())
		if kv, err := hubDomain.KeyValue(ctx, protocol.AssignmentsBucket); err == nil {
			short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
			if _, err := kv.Put(short, "canary-kv", []byte(`{"canary":"kv"}`)); err == nil {
				through = append(through, "nats.go KeyValue.Put in domain hub")
			}
			cancelShort()
		}
		// (b) a purge of the hub's history, (c) a delete of its registry.
		refused("$JS.hub.API.STREAM.PURGE."+protocol.HistoryStream, nil)
		refused("$JS.hub.API.STREAM.DELETE.KV_"+protocol.NodesBucket, nil)
		// The rest of the API as well: deleting a message, changing or
		// deleting a stream, another site's JetStream through the hub.
		refused("$JS.hub.API.STREAM.MSG.DELETE."+protocol.HistoryStream, []byte(`{"seq":1}`))
		refused("$JS.hub.API.STREAM.UPDATE.KV_"+protocol.AssignmentsBucket, []byte(`{"name":"KV_CCM_ASSIGNMENTS","subjects":["$KV.CCM_ASSIGNMENTS.>"]}`))
		refused("$JS.hub.API.STREAM.DELETE.KV_"+protocol.AssignmentsBucket, nil)
		refused("$JS.ams1.API.STREAM.PURGE."+protocol.HistoryStream, nil)
		// A consumer of the hub's assignments may be created (the site's
		// mirror needs that, and reads nothing the site does not mirror
		// anyway), but one that delivers into the hub's JetStream API
		// does not reach it: nats-server drops API requests that no client
		// sent (checked below: nothing changed).
		for _, deliver := range []string{"$JS.API.STREAM.PURGE." + protocol.HistoryStream, "$JS.hub.API.STREAM.PURGE." + protocol.HistoryStream} {
			req, err := json.Marshal(map[string]any{"stream_name": "KV_" + protocol.AssignmentsBucket, "config": map[string]any{
				"deliver_subject": deliver, "deliver_policy": "all", "ack_policy": "none", "idle_heartbeat": int64(100 * time.Millisecond), "inactive_threshold": int64(5 * time.Second)}})
			Expect(err).NotTo(HaveOccurred())
			_, _ = plain.Request("$JS.hub.API.CONSUMER.CREATE.KV_"+protocol.AssignmentsBucket, req, 2*time.Second)
		}
		Expect(through).To(BeEmpty(), "what a plain client of a site broker did to the hub's JetStream")

		// Nothing of the hub's changed.
		Consistently(func() uint64 { return streamMsgs(hubJS, protocol.HistoryStream) }, 2*time.Second, 200*time.Millisecond).Should(Equal(historyMsgs))
		Expect(streamMsgs(hubJS, "KV_"+protocol.AssignmentsBucket)).To(Equal(assignmentMsgs))
		for _, key := range []string{"canary-a", "canary-raw", "canary-kv"} {
			_, err = hubKV.Get(ctx, key)
			Expect(errors.Is(err, jetstream.ErrKeyNotFound)).To(BeTrue(), "key %s at the hub: %v", key, err)
		}
		_, err = hubJS.Stream(ctx, "KV_"+protocol.NodesBucket)
		Expect(err).NotTo(HaveOccurred(), "the hub's registry is still there")
		_, err = hubNodes.Get(ctx, "web1")
		Expect(err).NotTo(HaveOccurred())
		_, err = hubJS.Stream(ctx, "KV_"+protocol.AssignmentsBucket)
		Expect(err).NotTo(HaveOccurred())

		// And the link still works: the site was not cut off.
		Expect(hub.LeafConnections()).To(Equal(2))
		_, err = hubKV.Put(ctx, "after", []byte(`{"from":"the hub"}`))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error { _, err := fraKV.Get(ctx, "after"); return err }).WithTimeout(30 * time.Second).Should(Succeed())
	})
})
