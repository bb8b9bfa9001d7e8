package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
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

		// More than a flow control window (1 MiB pending) at once, both
		// ways: the history sourced from the site, the assignments
		// mirrored from the hub. Without the flow control replies
		// crossing, both would stall.
		big := make([]byte, 4<<10)
		for i := range big {
			big[i] = 'x'
		}
		const backlog = 600 // 2.4 MiB
		var acks []jetstream.PubAckFuture
		for i := range backlog {
			host := fmt.Sprintf("bulk%d", i)
			f, err := fraJS.PublishAsync(protocol.HistorySubject(id, host), big, jetstream.WithMsgID(protocol.HistoryMsgID(id, host)))
			Expect(err).NotTo(HaveOccurred())
			acks = append(acks, f)
		}
		for i := range backlog {
			f, err := hubJS.PublishAsync(fmt.Sprintf("$KV.%s.bulk%d", protocol.AssignmentsBucket, i), big)
			Expect(err).NotTo(HaveOccurred())
			acks = append(acks, f)
		}
		for _, f := range acks {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				Fail(err.Error())
			case <-ctx.Done():
				Fail("publishing the backlog timed out")
			}
		}
		Eventually(func() uint64 { return streamMsgs(hubJS, protocol.HistoryStream) }).WithTimeout(60*time.Second).Should(BeNumerically(">=", uint64(backlog+1)), "the site's backlog sourced into the hub")
		Eventually(func() uint64 { return streamMsgs(fraJS, "KV_"+protocol.AssignmentsBucket) }).WithTimeout(60*time.Second).Should(Equal(streamMsgs(hubJS, "KV_"+protocol.AssignmentsBucket)), "the hub's backlog mirrored at the site")

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
		short, cancelShort := context.WithTimeout(ctx, 4*time.Second)
		if kv, err := hubDomain.KeyValue(short, protocol.AssignmentsBucket); err == nil {
			if _, err := kv.Put(short, "canary-kv", []byte(`{"canary":"kv"}`)); err == nil {
				through = append(through, "nats.go KeyValue.Put in domain hub")
			}
		}
		cancelShort()
		// (b) a purge of the hub's history, (c) a delete of its registry.
		refused("$JS.hub.API.STREAM.PURGE."+protocol.HistoryStream, nil)
		refused("$JS.hub.API.STREAM.DELETE.KV_"+protocol.NodesBucket, nil)
		// The rest of the API as well: deleting a message, changing or
		// deleting a stream, another site's JetStream through the hub.
		refused("$JS.hub.API.STREAM.MSG.DELETE."+protocol.HistoryStream, []byte(`{"seq":1}`))
		refused("$JS.hub.API.STREAM.UPDATE.KV_"+protocol.AssignmentsBucket, []byte(`{"name":"KV_CCM_ASSIGNMENTS","subjects":["$KV.CCM_ASSIGNMENTS.>"]}`))
		refused("$JS.hub.API.STREAM.DELETE.KV_"+protocol.AssignmentsBucket, nil)
		refused("$JS.ams1.API.STREAM.PURGE."+protocol.HistoryStream, nil)
		// The hub's own clients reach a site's JetStream only to set up
		// and check the hub's sources.
		if m, err := orch.Request("$JS.fra1.API.STREAM.PURGE."+protocol.HistoryStream, nil, 2*time.Second); err == nil {
			through = append(through, "a hub client's $JS.fra1.API.STREAM.PURGE.CCM_HISTORY answered "+string(m.Data))
		}
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

		// Nor may it read the replies of the hub's clients: it listens to
		// every inbox while a client of the hub asks another, and the
		// hub's JetStream, for something.
		overheard := make(chan string, 64)
		_, err = plain.Subscribe("_INBOX.>", func(m *nats.Msg) { overheard <- string(m.Data) })
		Expect(err).NotTo(HaveOccurred())
		marker := make(chan struct{}, 16)
		_, err = plain.Subscribe("ccm.v1.req.node.canary-marker", func(*nats.Msg) { marker <- struct{}{} })
		Expect(err).NotTo(HaveOccurred())
		Expect(plain.Flush()).To(Succeed())
		// Its interest crosses in order: once the marker's has, so has
		// the inboxes'.
		Eventually(func() bool {
			Expect(orch.Publish("ccm.v1.req.node.canary-marker", nil)).To(Succeed())
			select {
			case <-marker:
				return true
			case <-time.After(100 * time.Millisecond):
				return false
			}
		}).Should(BeTrue())
		svc := connect(hub.ClientURL())
		_, err = svc.Subscribe("canary.hub.svc", func(m *nats.Msg) { _ = m.Respond([]byte("canary-hub-reply-3c9")) })
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Flush()).To(Succeed())
		m, err := orch.Request("canary.hub.svc", nil, 2*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(m.Data)).To(Equal("canary-hub-reply-3c9"))
		_, err = hubJS.Stream(ctx, protocol.HistoryStream)
		Expect(err).NotTo(HaveOccurred())
		// The hub broker's own lookups neither (the site brokers' cross).
		inproc, err := hub.InProcessConn()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(inproc.Close)
		inprocJS, err := jetstream.New(inproc)
		Expect(err).NotTo(HaveOccurred())
		_, err = inprocJS.Stream(ctx, protocol.HistoryStream)
		Expect(err).NotTo(HaveOccurred())
		siteInproc, err := fra.InProcessConn()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(siteInproc.Close)
		siteToHub, err := jetstream.NewWithDomain(siteInproc, broker.DefaultHubDomain)
		Expect(err).NotTo(HaveOccurred())
		_, err = siteToHub.Stream(ctx, "KV_"+protocol.AssignmentsBucket)
		Expect(err).NotTo(HaveOccurred(), "the site broker asks the hub whether it answers for the assignments")
		// (It hears its own site broker's lookup, of the assignments.)
		Consistently(overheard, time.Second).ShouldNot(Receive(Or(ContainSubstring("canary-hub-reply"),
			And(ContainSubstring("stream_info_response"), ContainSubstring(`"name":"`+protocol.HistoryStream+`"`)))))

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

		Expect(streamMsgs(fraJS, protocol.HistoryStream)).To(BeNumerically(">=", uint64(backlog+1)), "site fra1's history is not purged")

		// And the link still works: the site was not cut off.
		Expect(hub.LeafConnections()).To(Equal(2))
		_, err = hubKV.Put(ctx, "after", []byte(`{"from":"the hub"}`))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error { _, err := fraKV.Get(ctx, "after"); return err }).WithTimeout(30 * time.Second).Should(Succeed())
	})
})

// The site brokers' users are client users that may connect as leaf nodes
// only, and they alone may: a hub's other users (its auth file's) and
// clients without credentials cannot log in as a leaf node.
var _ = Describe("Who may connect to a hub as a leaf node", func() {
	siteWith := func(hub *broker.Broker, site, user, password string) *broker.Broker {
		GinkgoHelper()
		return brokertest.StartConfig(GinkgoT(), broker.Config{Site: site,
			Hub: broker.HubConfig{URLs: []string{hub.LeafURL()}, User: user, Password: password}})
	}

	It("is a site broker's user only: not a user of the hub's auth file, not a client without credentials", func() {
		dir := GinkgoT().TempDir()
		auth := filepath.Join(dir, "auth.yaml")
		Expect(os.WriteFile(auth, []byte("users:\n  - user: admin\n    password: admin-pw\n"), 0o600)).To(Succeed())
		hub := brokertest.StartConfig(GinkgoT(), broker.Config{AuthFile: auth,
			LeafNodes: broker.LeafNodesConfig{Listen: "127.0.0.1:-1", Users: []broker.LeafUser{siteUser}}})
		admin := siteWith(hub, "ams1", "admin", "admin-pw")
		anonymous := siteWith(hub, "lon1", "", "")
		good := siteWith(hub, "fra1", siteUser.User, siteUser.Password)
		Eventually(good.LeafConnections).WithTimeout(10 * time.Second).Should(Equal(1))
		Consistently(hub.LeafConnections, 2*time.Second, 200*time.Millisecond).Should(Equal(1))
		Expect(admin.LeafConnections()).To(BeZero())
		Expect(anonymous.LeafConnections()).To(BeZero())
		// The site broker's user is no client user either.
		_, err := nats.Connect(hub.ClientURL(), nats.UserInfo(siteUser.User, siteUser.Password))
		Expect(err).To(MatchError(nats.ErrAuthorization))
		nc := connect(hub.ClientURL(), nats.UserInfo("admin", "admin-pw"))
		Expect(nc.Flush()).To(Succeed())
		// Reloading keeps it so.
		Expect(hub.Reload(context.Background())).To(Succeed())
		Consistently(hub.LeafConnections, time.Second, 200*time.Millisecond).Should(Equal(1))
	})

	It("keeps a hub without an auth file open to clients without credentials, not to leaf nodes without them", func() {
		hub := startHub()
		anonymous := siteWith(hub, "lon1", "", "")
		good := startSite("fra1", hub)
		Eventually(good.LeafConnections).WithTimeout(10 * time.Second).Should(Equal(1))
		Consistently(hub.LeafConnections, 2*time.Second, 200*time.Millisecond).Should(Equal(1))
		Expect(anonymous.LeafConnections()).To(BeZero())
		nc := connect(hub.ClientURL())
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		_, err = js.AccountInfo(context.Background())
		Expect(err).NotTo(HaveOccurred(), "an anonymous client of the hub may do everything, as before")
		Expect(hub.Reload(context.Background())).To(Succeed())
		Expect(nc.Flush()).To(Succeed())
		Consistently(hub.LeafConnections, time.Second, 200*time.Millisecond).Should(Equal(1))
	})

	It("refuses to start a hub whose site broker's user is also a user of its auth file, naming it", func() {
		dir := GinkgoT().TempDir()
		auth := filepath.Join(dir, "auth.yaml")
		Expect(os.WriteFile(auth, []byte("users:\n  - user: site\n    password: other-pw\n"), 0o600)).To(Succeed())
		b, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: GinkgoT().TempDir(), AuthFile: auth,
			LeafNodes: broker.LeafNodesConfig{Listen: "127.0.0.1:-1", Users: []broker.LeafUser{siteUser}}})
		Expect(err).NotTo(HaveOccurred())
		err = b.Start(context.Background())
		Expect(err).To(MatchError(broker.ErrInvalidConfig))
		Expect(err.Error()).To(ContainSubstring("leafnodes.users[0] (user site): also a user of the auth file " + auth))
	})

	It("refuses the reserved name of a hub's anonymous clients as a site broker's user", func() {
		err := broker.Config{LeafNodes: broker.LeafNodesConfig{Listen: ":7422", Users: []broker.LeafUser{{User: "ccm-broker-anonymous", Password: "pw"}}}}.Validate()
		Expect(err).To(MatchError(broker.ErrInvalidConfig))
		Expect(err.Error()).To(ContainSubstring("leafnodes.users[0] (user ccm-broker-anonymous): the name is reserved"))
	})
})
