package orchestrator_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Client.Run", func() {
	var (
		fl     *fleettest.Fleet
		nc     *nats.Conn
		client *orchestrator.Client
		ctx    context.Context
	)
	BeforeEach(func() {
		fl = startFleet()
		nc = fl.Connect(GinkgoT())
		client = orchestrator.New(nc, orchestrator.WithLogger(slog.New(slog.NewTextHandler(GinkgoWriter, nil))))
		ctx = context.Background()
	})

	isDebian := func(f map[string]any) bool { return f["os"] == "debian" }

	Context("a file with a per-host templated path", func() {
		var dir, name string
		motd := func(content string) *protocol.EnsureRequest {
			return ensureRequest("file", map[string]any{
				"name": name, "ensure": "present", "content": content,
				"owner": "root", "group": "root", "mode": "0644",
			})
		}
		BeforeEach(func() {
			dir = GinkgoT().TempDir()
			for _, id := range fl.Identities {
				Expect(os.Mkdir(filepath.Join(dir, id), 0o755)).To(Succeed())
			}
			name = dir + "/{{ lookup('facts.identity') }}/motd"
		})

		It("changes every host, then finds them stable", func() {
			sub := sniff(nc, protocol.RequestSubjectPrefix+".>")
			res, err := client.Run(ctx, orchestrator.Request{Ensure: motd("hello {{ lookup('facts.os') }}")})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(protocol.ExitOK))
			Expect(res.Expected).To(Equal(fl.Identities))
			Expect(res.Replied).To(Equal(fleetSize))
			Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{Changed: fleetSize}))
			Expect(res.Summary.Resources).To(Equal(orchestrator.ResourceCounts{Changed: fleetSize}))
			Expect(res.Groups).To(HaveLen(1))
			Expect(res.Groups[0]).To(Equal(orchestrator.Group{Resource: "file#" + name, Outcome: "changed", Hosts: fl.Identities, Count: fleetSize}))
			for i, id := range fl.Identities {
				Expect(os.ReadFile(filepath.Join(dir, id, "motd"))).To(Equal([]byte("hello " + fl.Facts[i]["os"].(string))))
			}

			res, err = client.Run(ctx, orchestrator.Request{Filter: mustFilter([]string{"os=debian"}, nil), Ensure: motd("hello {{ lookup('facts.os') }}")})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(protocol.ExitOK))
			debian := identitiesWhere(fl, isDebian)
			Expect(res.Expected).To(Equal(debian))
			Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{OK: len(debian)}))
			Expect(res.Groups).To(ConsistOf(orchestrator.Group{Resource: "file#" + name, Outcome: "stable", Hosts: debian, Count: len(debian)}))

			var subjects []string
			for _, m := range sent(nc, sub) {
				subjects = append(subjects, m.Subject)
			}
			Expect(subjects).To(Equal([]string{"ccm.v1.req.all", "ccm.v1.req.fact.os.debian"}))
		})

		It("reports drift under noop with exit 5 and changes nothing", func() {
			res, err := client.Run(ctx, orchestrator.Request{Ensure: motd("one")})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(protocol.ExitOK))

			res, err = client.Run(ctx, orchestrator.Request{Ensure: motd("two"), Noop: true, Filter: mustFilter([]string{"role=web"}, nil)})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(protocol.ExitDrift))
			web := identitiesWhere(fl, func(f map[string]any) bool { return f["role"] == "web" })
			Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{WouldChange: len(web)}))
			Expect(res.Summary.Resources.WouldChange).To(Equal(len(web)))
			Expect(res.Groups).To(HaveLen(1))
			Expect(res.Groups[0].Outcome).To(Equal("would_change"))
			Expect(res.Groups[0].Message).NotTo(BeEmpty())
			for _, id := range fl.Identities {
				Expect(os.ReadFile(filepath.Join(dir, id, "motd"))).To(Equal([]byte("one")))
			}

			res, err = client.Run(ctx, orchestrator.Request{Ensure: motd("one"), Noop: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(protocol.ExitOK), "no drift under noop is 0")
		})
	})

	It("groups identical outcomes and exits 2 when a resource fails somewhere", func() {
		cmd := "/usr/bin/test {{ lookup('facts.os') }} = debian"
		res, err := client.Run(ctx, orchestrator.Request{Ensure: ensureRequest("exec", map[string]any{"name": cmd})})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(protocol.ExitFailed))
		debian := identitiesWhere(fl, isDebian)
		rhel := identitiesWhere(fl, func(f map[string]any) bool { return !isDebian(f) })
		Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{Changed: len(debian), Failed: len(rhel)}))
		Expect(res.Groups).To(HaveLen(2))
		Expect(res.Groups[0]).To(Equal(orchestrator.Group{Resource: "exec#" + cmd, Outcome: "changed", Hosts: debian, Count: len(debian)}))
		Expect(res.Groups[1].Resource).To(Equal("exec#" + cmd))
		Expect(res.Groups[1].Outcome).To(Equal("failed"))
		Expect(res.Groups[1].Message).To(ContainSubstring("exit code 1"))
		Expect(res.Groups[1].Hosts).To(Equal(rhel))
		for _, h := range res.Hosts {
			Expect(h.Events).To(HaveLen(1))
			Expect(h.Error).To(BeNil())
		}
	})

	It("exits 4 and sends nothing when no host matches", func() {
		sub := sniff(nc, protocol.RequestSubjectPrefix+".>")
		res, err := client.Run(ctx, orchestrator.Request{Filter: mustFilter([]string{"os=plan9"}, nil), Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"})})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(protocol.ExitNoMatch))
		Expect(res.Expected).To(BeEmpty())
		Expect(res.Hosts).To(BeEmpty())
		Expect(sent(nc, sub)).To(BeEmpty())
	})

	It("takes exact --host ids as the expected set without discovery; a silent one is no reply, exit 3", func() {
		disc := sniff(nc, protocol.DiscoverySubjectPrefix+".>")
		reqs := sniff(nc, protocol.RequestSubjectPrefix+".>")
		res, err := client.Run(ctx, orchestrator.Request{
			Filter:  mustFilter(nil, []string{"sim-0001", "ghost-1"}),
			Timeout: time.Second,
			Ensure:  ensureRequest("exec", map[string]any{"name": "/bin/true"}),
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(protocol.ExitNoReply))
		Expect(res.Expected).To(Equal([]string{"ghost-1", "sim-0001"}))
		Expect(res.Replied).To(Equal(1))
		Expect(res.NoReply).To(Equal([]string{"ghost-1"}))
		Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{Changed: 1, NoReply: 1}))
		Expect(res.Hosts).To(HaveLen(2))
		Expect(res.Hosts[0]).To(Equal(orchestrator.HostResult{Identity: "ghost-1", Outcome: orchestrator.OutcomeNoReply, Events: []*protocol.TransactionEvent{}}))
		Expect(sent(nc, disc)).To(BeEmpty())

		msgs := sent(nc, reqs)
		Expect(msgs).To(HaveLen(2))
		Expect(msgs[0].Subject).To(Equal("ccm.v1.req.node.ghost-1"))
		Expect(msgs[1].Subject).To(Equal("ccm.v1.req.node.sim-0001"))
		req, err := protocol.DecodeFleetRequest(msgs[0].Data, protocol.Limits{})
		Expect(err).NotTo(HaveOccurred())
		Expect(req.ID).To(Equal(res.RequestID))
		Expect(req.Targets).To(Equal([]string{"ghost-1", "sim-0001"}))
		Expect(time.Duration(req.TTL)).To(Equal(orchestrator.DefaultTTL))
	})

	It("sends the filter with explicit Hosts, so a listed host it does not select does not reply", func() {
		res, err := client.Run(ctx, orchestrator.Request{
			Hosts:   []string{"sim-0001", "sim-0002"},
			Filter:  mustFilter([]string{"os=debian"}, nil),
			Timeout: time.Second,
			Ensure:  ensureRequest("exec", map[string]any{"name": "/bin/true"}),
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.NoReply).To(Equal([]string{"sim-0002"}))
		Expect(res.ExitCode).To(Equal(protocol.ExitNoReply))
	})

	Context("in batches", func() {
		It("stops asking new hosts once MaxFailures hosts failed and reports those never asked", func() {
			reqs := sniff(nc, protocol.RequestSubjectPrefix+".>")
			res, err := client.Run(ctx, orchestrator.Request{
				Batch: 2, MaxFailures: 1,
				Ensure: ensureRequest("exec", map[string]any{"name": "/bin/false"}),
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(protocol.ExitFailed))
			Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{Failed: 2}))
			Expect(res.NotAsked).To(Equal(fl.Identities[2:]))
			Expect(res.NoReply).To(BeEmpty())
			Expect(res.Hosts).To(HaveLen(2))

			msgs := sent(nc, reqs)
			Expect(msgs).To(HaveLen(2))
			for i, m := range msgs {
				Expect(m.Subject).To(Equal(protocol.RequestNodeSubject(fl.Identities[i])))
				req, err := protocol.DecodeFleetRequest(m.Data, protocol.Limits{})
				Expect(err).NotTo(HaveOccurred())
				Expect(req.Targets).To(Equal([]string{fl.Identities[i]}))
			}
		})

		It("asks every host through a sliding window of N% when nothing fails", func() {
			reqs := sniff(nc, protocol.RequestSubjectPrefix+".>")
			res, err := client.Run(ctx, orchestrator.Request{
				BatchPercent: 25, BatchSleep: time.Millisecond, MaxFailures: 1,
				Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}),
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(protocol.ExitOK))
			Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{Changed: fleetSize}))
			Expect(res.NotAsked).To(BeEmpty())
			Expect(sent(nc, reqs)).To(HaveLen(fleetSize))
		})
	})

	It("lists unexpected hosts and counts duplicate and malformed replies without trusting them", func() {
		// The impostor answers on ghost-1's node subject: junk, a reply as a
		// host nobody asked, ghost-2 twice, and last ghost-1, so by the time
		// the run has every expected reply it has seen the rest.
		imp, err := nc.Subscribe(protocol.RequestNodeSubject("ghost-1"), func(m *nats.Msg) {
			req, err := protocol.DecodeFleetRequest(m.Data, protocol.Limits{})
			if err != nil {
				return
			}
			_ = m.Respond([]byte(`{"protocol":"io.choria.ccm.v1.fleet.reply","surprise":true}`))
			_ = m.Respond(fleetReply("someotherrequest", "ghost-2"))
			_ = m.Respond(fleetReply(req.ID, "intruder-1"))
			_ = m.Respond(fleetReply(req.ID, "intruder-1"))
			_ = m.Respond(fleetReply(req.ID, "ghost-2"))
			_ = m.Respond(fleetReply(req.ID, "ghost-2"))
			_ = m.Respond(fleetReply(req.ID, "ghost-1"))
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(imp.Unsubscribe)
		Expect(nc.Flush()).To(Succeed())

		res, err := client.Run(ctx, orchestrator.Request{
			Hosts:  []string{"sim-0001", "ghost-1", "ghost-2"},
			Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}),
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Unexpected).To(Equal([]string{"intruder-1"}))
		Expect(res.Replied).To(Equal(3))
		Expect(res.Duplicates).To(Equal(2))
		Expect(res.Malformed).To(Equal(2))
		Expect(res.Summary.Hosts).To(Equal(orchestrator.HostCounts{OK: 2, Changed: 1}))
		Expect(res.ExitCode).To(Equal(protocol.ExitOK))
	})

	It("reports progress and each reply as it arrives", func() {
		var progress [][2]int
		var replies []string
		res, err := client.Run(ctx, orchestrator.Request{
			Filter:   mustFilter([]string{"os=rhel"}, nil),
			Ensure:   ensureRequest("exec", map[string]any{"name": "/bin/true"}),
			Progress: func(replied, expected int) { progress = append(progress, [2]int{replied, expected}) },
			OnReply:  func(h orchestrator.HostResult) { replies = append(replies, h.Identity) },
		})
		Expect(err).NotTo(HaveOccurred())
		n := len(res.Expected)
		Expect(progress).To(HaveLen(n + 1))
		Expect(progress[0]).To(Equal([2]int{0, n}))
		Expect(progress[n]).To(Equal([2]int{n, n}))
		Expect(replies).To(ConsistOf(res.Expected))
	})

	It("returns what it collected when its context ends", func() {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		res, err := client.Run(cctx, orchestrator.Request{
			Hosts:    []string{"ghost-1"},
			Ensure:   ensureRequest("exec", map[string]any{"name": "/bin/true"}),
			Progress: func(int, int) { cancel() },
		})
		Expect(err).To(MatchError(context.Canceled))
		Expect(err).To(MatchError(orchestrator.ErrInterrupted))
		// Asked and within its deadline: still running, not silent.
		Expect(res.Running).To(Equal([]string{"ghost-1"}))
		Expect(res.NoReply).To(BeEmpty())
		Expect(res.ExitCode).To(Equal(protocol.ExitInterrupted))
	})

	It("encodes its result with the documented keys", func() {
		res, err := client.Run(ctx, orchestrator.Request{Hosts: []string{"sim-0001"}, Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"})})
		Expect(err).NotTo(HaveOccurred())
		b, err := json.Marshal(res)
		Expect(err).NotTo(HaveOccurred())
		var doc map[string]any
		Expect(json.Unmarshal(b, &doc)).To(Succeed())
		for _, k := range []string{"request_id", "expected", "replied", "no_reply", "unexpected", "not_asked", "summary", "hosts", "groups", "exit_code"} {
			Expect(doc).To(HaveKey(k))
		}
		Expect(doc["no_reply"]).To(Equal([]any{}))
		host := doc["hosts"].([]any)[0].(map[string]any)
		for _, k := range []string{"identity", "events", "error", "duration", "outcome"} {
			Expect(host).To(HaveKey(k))
		}
		Expect(doc["summary"]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("changed", 1.0)))
	})

	DescribeTable("refuses an invalid request before sending anything",
		func(req orchestrator.Request) {
			sub := sniff(nc, protocol.SubjectRoot+".>")
			if req.Ensure == nil && req.TTL != -2 {
				req.Ensure = ensureRequest("exec", map[string]any{"name": "/bin/true"})
			}
			if req.TTL == -2 {
				req.TTL = 0
			}
			_, err := client.Run(ctx, req)
			Expect(err).To(MatchError(orchestrator.ErrInvalid))
			Expect(sent(nc, sub)).To(BeEmpty())
		},
		Entry("no body", orchestrator.Request{TTL: -2}),
		Entry("a TTL over the limit", orchestrator.Request{TTL: 25 * time.Hour}),
		Entry("a negative timeout", orchestrator.Request{Timeout: -time.Second}),
		Entry("a negative batch", orchestrator.Request{Batch: -1}),
		Entry("a batch percentage over 100", orchestrator.Request{BatchPercent: 101}),
		Entry("both batch forms", orchestrator.Request{Batch: 2, BatchPercent: 10}),
		Entry("an invalid host", orchestrator.Request{Hosts: []string{"-bad"}}),
		Entry("a filter that does not compile", orchestrator.Request{Filter: &protocol.Filter{Where: []protocol.FilterTerm{{Key: "os", Op: "<", Value: "debian"}}}}),
	)
})
