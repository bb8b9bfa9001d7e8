package orchestrator_test

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("HistoryIndex", func() {
	It("rebuilds, from the records it follows, the same runs as Client.History", func() {
		fl := fleettest.StartWith(GinkgoT(), fleettest.Options{History: true, Config: agent.Config{HistoryRetry: 100 * time.Millisecond}},
			fleetSize, nil, fleetVary...)
		nc := fl.Connect(GinkgoT())
		client := orchestrator.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()

		var ids []string
		for _, noop := range []bool{false, true} {
			e, err := protocol.NewEnsureRequest("exec", map[string]any{"name": "/bin/true"})
			Expect(err).NotTo(HaveOccurred())
			res, err := client.Run(ctx, orchestrator.Request{Ensure: e, Noop: noop})
			Expect(err).NotTo(HaveOccurred())
			ids = append(ids, res.RequestID)
		}
		// One expected host never answers.
		e, err := protocol.NewEnsureRequest("exec", map[string]any{"name": "/bin/false"})
		Expect(err).NotTo(HaveOccurred())
		res, err := client.Run(ctx, orchestrator.Request{Ensure: e, Filter: &protocol.Filter{Hosts: []string{fl.Identities[0], "ghost-1"}}, Timeout: 300 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		ids = append(ids, res.RequestID)

		x := orchestrator.NewHistoryIndex(0)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		fctx, fcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- jsstore.Follow(fctx, js, func(r jsstore.Record) error { x.Add(r); return nil }) }()
		defer func() { fcancel(); Expect(<-done).To(Succeed()) }()

		doc := func(r *orchestrator.Result) map[string]any {
			raw, err := json.Marshal(r)
			Expect(err).NotTo(HaveOccurred())
			var m map[string]any
			Expect(json.Unmarshal(raw, &m)).To(Succeed())
			delete(m, "elapsed")
			return m
		}
		for _, id := range ids {
			want, err := client.History(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() any {
				got := x.Run(id)
				if got == nil {
					return nil
				}
				return doc(got.Result)
			}).Should(Equal(doc(want.Result)), id)
		}
		Expect(x.Len()).To(Equal(3))
		list := x.Runs(0, 10)
		Expect(list).To(HaveLen(3))
		Expect(list[0].RequestID).To(Equal(ids[2]), "newest first")
		Expect(list[0].Hosts.NoReply).To(Equal(1))
		Expect(x.Runs(1, 10)).To(HaveLen(2))
		Expect(x.Host(fl.Identities[0], 0)).To(HaveLen(3))
		id, outcome, ok := x.LastResult(fl.Identities[0])
		Expect(ok).To(BeTrue())
		Expect(id).To(Equal(ids[2]), "its newest run")
		Expect(outcome).To(Equal(orchestrator.OutcomeFailed))
		id, outcome, _ = x.LastResult(fl.Identities[1])
		Expect([]string{id, outcome}).To(Equal([]string{ids[1], orchestrator.OutcomeWouldChange}), "the noop run (an exec would run), its last")
		_, _, ok = x.LastResult("ghost-1")
		Expect(ok).To(BeFalse())
		Expect(x.HostLastEvents(fl.Identities[0])).To(HaveKeyWithValue("exec#/bin/false", HaveField("RequestID", ids[2])))
		Expect(x.HostLastEvents(fl.Identities[1])).To(HaveKeyWithValue("exec#/bin/true", HaveField("RequestID", ids[1])))
		Expect(x.Host(fl.Identities[1], 2)).To(HaveLen(2))
	})

	It("keeps the newest runs up to its bound and ignores records of runs it dropped", func() {
		x := orchestrator.NewHistoryIndex(2)
		t0 := time.Now()
		add := func(id string, at time.Duration) string {
			req := protocol.HistoryRequest{Protocol: protocol.HistoryRequestProtocol, RequestID: id, Created: t0.Add(at), Discovery: protocol.DiscoveryHosts,
				Expected: []string{"h1"}, Timeout: protocol.Duration(time.Second), TTL: protocol.Duration(time.Minute)}
			data, err := json.Marshal(&req)
			Expect(err).NotTo(HaveOccurred())
			return x.Add(jsstore.Record{RequestID: id, Data: data, Time: t0.Add(at)})
		}
		Expect(add("aaaaaaaaaaaaaaaaaaa1", 1*time.Second)).To(Equal("aaaaaaaaaaaaaaaaaaa1"))
		Expect(add("aaaaaaaaaaaaaaaaaaa2", 2*time.Second)).To(Equal("aaaaaaaaaaaaaaaaaaa2"))
		Expect(add("aaaaaaaaaaaaaaaaaaa3", 3*time.Second)).To(Equal("aaaaaaaaaaaaaaaaaaa3"))
		Expect(x.Len()).To(Equal(2))
		Expect(x.Run("aaaaaaaaaaaaaaaaaaa1")).To(BeNil(), "the oldest went")
		_, _, ok := x.LastResult("h1")
		Expect(ok).To(BeFalse(), "no run kept holds a record of h1")
		Expect(add("aaaaaaaaaaaaaaaaaaa0", 0)).To(BeEmpty(), "older than everything kept")
		Expect(add("aaaaaaaaaaaaaaaaaaa3", 3*time.Second)).To(BeEmpty(), "a second request record is a duplicate")
		x.Add(jsstore.Record{RequestID: "aaaaaaaaaaaaaaaaaaa2", Identity: "h1", Data: []byte(`{"nope":1}`), Time: t0.Add(3 * time.Second)})
		Expect(x.Run("aaaaaaaaaaaaaaaaaaa2").Result.Malformed).To(Equal(1))
	})

	It("names the newest run a host did not reply to, until a newer record of it", func() {
		x := orchestrator.NewHistoryIndex(0)
		t0 := time.Now()
		request := func(id string, at time.Duration, hosts ...string) {
			req := protocol.HistoryRequest{Protocol: protocol.HistoryRequestProtocol, RequestID: id, Created: t0.Add(at), Discovery: protocol.DiscoveryHosts,
				Expected: hosts, Timeout: protocol.Duration(time.Second), TTL: protocol.Duration(time.Minute)}
			data, err := json.Marshal(&req)
			Expect(err).NotTo(HaveOccurred())
			Expect(x.Add(jsstore.Record{RequestID: id, Data: data, Time: t0.Add(at)})).To(Equal(id))
		}
		reply := func(id, host string, at time.Duration) {
			data, err := json.Marshal(protocol.NewFleetReply(id, host, t0.Add(at)))
			Expect(err).NotTo(HaveOccurred())
			Expect(x.Add(jsstore.Record{RequestID: id, Identity: host, Data: data, Time: t0.Add(at)})).To(Equal(id))
		}
		request("bbbbbbbbbbbbbbbbbbb1", time.Second, "h1", "h2")
		reply("bbbbbbbbbbbbbbbbbbb1", "h1", 1100*time.Millisecond)
		reply("bbbbbbbbbbbbbbbbbbb1", "h2", 1200*time.Millisecond)
		_, _, ok := x.LastUnanswered("h2")
		Expect(ok).To(BeFalse(), "h2 replied to the only run")

		request("bbbbbbbbbbbbbbbbbbb2", 2*time.Second, "h1", "h2")
		reply("bbbbbbbbbbbbbbbbbbb2", "h1", 2100*time.Millisecond)
		id, req, ok := x.LastUnanswered("h2")
		Expect(ok).To(BeTrue())
		Expect(id).To(Equal("bbbbbbbbbbbbbbbbbbb2"))
		Expect(req.Expected).To(ConsistOf("h1", "h2"))
		id, outcome, _ := x.LastResult("h2")
		Expect([]string{id, outcome}).To(Equal([]string{"bbbbbbbbbbbbbbbbbbb1", orchestrator.OutcomeOK}), "its newest record is of the run before")
		_, _, ok = x.LastUnanswered("h1")
		Expect(ok).To(BeFalse(), "h1 replied")

		request("bbbbbbbbbbbbbbbbbbb3", 3*time.Second, "h2")
		reply("bbbbbbbbbbbbbbbbbbb3", "h2", 3100*time.Millisecond)
		_, _, ok = x.LastUnanswered("h2")
		Expect(ok).To(BeFalse(), "a newer run got its reply")
	})
})
