package orchestrator

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("exit code classification", func() {
	DescribeTable("applies the precedence 2, 3, 5, 0 and 4 for no match",
		func(expected int, hosts HostCounts, notAsked int, noop bool, want protocol.ExitCode) {
			Expect(exitCode(expected, hosts, notAsked, noop)).To(Equal(want))
		},
		Entry("no host matched", 0, HostCounts{}, 0, false, protocol.ExitNoMatch),
		Entry("all ok", 3, HostCounts{OK: 2, Changed: 1}, 0, false, protocol.ExitOK),
		Entry("a failure wins over no reply and drift", 3, HostCounts{Failed: 1, NoReply: 1, WouldChange: 1}, 0, true, protocol.ExitFailed),
		Entry("no reply wins over drift", 3, HostCounts{NoReply: 1, WouldChange: 2}, 0, true, protocol.ExitNoReply),
		Entry("a host never asked counts as no reply", 3, HostCounts{OK: 2}, 1, false, protocol.ExitNoReply),
		Entry("drift under noop", 3, HostCounts{OK: 2, WouldChange: 1}, 0, true, protocol.ExitDrift),
		Entry("would change outside noop is not drift", 3, HostCounts{OK: 2, WouldChange: 1}, 0, false, protocol.ExitOK),
	)

	DescribeTable("classifies one host's reply",
		func(noop bool, reply *protocol.FleetReply, want string) {
			Expect(hostOutcome(noop, reply)).To(Equal(want))
		},
		Entry("a request-level error", false, &protocol.FleetReply{Error: &protocol.Error{Code: protocol.CodeBusy}}, OutcomeFailed),
		Entry("a failed event", false, reply(ev("stable"), ev("failed")), OutcomeFailed),
		Entry("changed", false, reply(ev("stable"), ev("changed")), OutcomeChanged),
		Entry("refreshed counts as changed", false, reply(ev("refreshed")), OutcomeChanged),
		Entry("would change under noop", true, reply(ev("changed"), ev("stable")), OutcomeWouldChange),
		Entry("failure wins over drift", true, reply(ev("changed"), ev("failed")), OutcomeFailed),
		Entry("stable and skipped are ok", false, reply(ev("stable"), ev("skipped")), OutcomeOK),
		Entry("no events is ok", false, reply(), OutcomeOK),
	)
})

var _ = Describe("grouping", func() {
	It("groups hosts by resource, outcome and message, problems last", func() {
		failed := ev("failed")
		failed.Errors = []string{"exit code 1", "stderr: nope"}
		res := &Result{Expected: []string{"a", "b", "c", "d", "e"}, Hosts: []HostResult{
			{Identity: "c", Outcome: OutcomeOK, Events: []*protocol.TransactionEvent{ev("stable")}},
			{Identity: "a", Outcome: OutcomeOK, Events: []*protocol.TransactionEvent{ev("stable")}},
			{Identity: "b", Outcome: OutcomeFailed, Events: []*protocol.TransactionEvent{failed}},
			{Identity: "d", Outcome: OutcomeFailed, Error: &protocol.Error{Code: protocol.CodeExpired, Message: "too late"}, Events: []*protocol.TransactionEvent{}},
			{Identity: "e", Outcome: OutcomeNoReply, Events: []*protocol.TransactionEvent{}},
		}}
		res.summarize(ensureRefs("file#/srv/{{ lookup('facts.identity') }}"))
		Expect(res.Groups).To(Equal([]Group{
			{Resource: "file#/srv/{{ lookup('facts.identity') }}", Outcome: "stable", Hosts: []string{"a", "c"}, Count: 2},
			{Resource: "file#/srv/{{ lookup('facts.identity') }}", Outcome: "failed", Message: "exit code 1; stderr: nope", Hosts: []string{"b"}, Count: 1},
			{Outcome: GroupError, Message: "expired: too late", Hosts: []string{"d"}, Count: 1},
		}))
		Expect(res.Summary).To(Equal(Summary{
			Hosts:     HostCounts{OK: 2, Failed: 2, NoReply: 1},
			Resources: ResourceCounts{Stable: 2, Failed: 1},
		}))
		Expect(res.ExitCode).To(Equal(protocol.ExitFailed))
	})
})

var _ = Describe("subject selection", func() {
	c := New(nil)
	filter := func(where []string, hosts ...string) *protocol.Filter {
		f, err := protocol.NewFilter(where, hosts)
		Expect(err).NotTo(HaveOccurred())
		return f
	}
	many := strings.Split("h01 h02 h03 h04 h05 h06 h07 h08 h09 h10 h11", " ")

	It("discovers on node subjects for a few exact hosts, a fact subject for a subject-fact equality, else all", func() {
		Expect(c.discoverySubjects(nil)).To(Equal([]string{"ccm.v1.disc.all"}))
		Expect(c.discoverySubjects(filter([]string{"role=web", "os=debian"}))).To(Equal([]string{"ccm.v1.disc.fact.role.web"}))
		Expect(c.discoverySubjects(filter([]string{"datacenter=x"}))).To(Equal([]string{"ccm.v1.disc.all"}))
		Expect(c.discoverySubjects(filter([]string{"platform_version=22.04", "platform=ubuntu"}))).To(Equal([]string{"ccm.v1.disc.fact.platform.ubuntu"}))
		Expect(c.discoverySubjects(filter(nil, "b", "a"))).To(Equal([]string{"ccm.v1.disc.node.a", "ccm.v1.disc.node.b"}))
		Expect(c.discoverySubjects(filter([]string{"os=debian"}, "/^a/"))).To(Equal([]string{"ccm.v1.disc.fact.os.debian"}))
		Expect(c.discoverySubjects(filter([]string{"os=debian"}, many...))).To(Equal([]string{"ccm.v1.disc.fact.os.debian"}))
		Expect(New(nil, WithSubjectFacts()).discoverySubjects(filter([]string{"os=debian"}))).To(Equal([]string{"ccm.v1.disc.all"}))
	})

	It("requests on node subjects up to SmallSet hosts, then a fact subject or all", func() {
		subjects, perNode := c.requestSubjects(filter([]string{"os=debian"}), []string{"a", "b"})
		Expect(subjects).To(Equal([]string{"ccm.v1.req.node.a", "ccm.v1.req.node.b"}))
		Expect(perNode).To(BeTrue())
		subjects, perNode = c.requestSubjects(filter([]string{"os=debian"}), many)
		Expect(subjects).To(Equal([]string{"ccm.v1.req.fact.os.debian"}))
		Expect(perNode).To(BeFalse())
		subjects, _ = c.requestSubjects(nil, many)
		Expect(subjects).To(Equal([]string{"ccm.v1.req.all"}))
	})
})

var _ = Describe("Request", func() {
	DescribeTable("sizes the sliding window",
		func(req Request, n, want int) { Expect(req.window(n)).To(Equal(want)) },
		Entry("no batching asks everyone", Request{}, 24, 24),
		Entry("a batch size", Request{Batch: 5}, 24, 5),
		Entry("a batch larger than the set", Request{Batch: 50}, 24, 24),
		Entry("a percentage rounds up", Request{BatchPercent: 10}, 24, 3),
		Entry("a percentage is at least one host", Request{BatchPercent: 1}, 24, 1),
		Entry("100%", Request{BatchPercent: 100}, 24, 24),
	)

	It("makes request ids the protocol accepts", func() {
		seen := map[string]bool{}
		for range 100 {
			id := newRequestID()
			Expect(protocol.ValidateRequestID(id)).To(Succeed())
			Expect(id).To(MatchRegexp(`^[a-z0-9]{20}$`))
			seen[id] = true
		}
		Expect(seen).To(HaveLen(100))
	})
})

func reply(events ...*protocol.TransactionEvent) *protocol.FleetReply {
	return &protocol.FleetReply{Events: events}
}

// ev builds an event with the given outcome.
func ev(outcome string) *protocol.TransactionEvent {
	e := protocol.NewTransactionEvent("id", "file", "/srv/x", "")
	switch outcome {
	case "failed":
		e.Failed = true
	case "skipped":
		e.Skipped = true
	case "changed":
		e.Changed = true
	case "refreshed":
		e.Refreshed = true
	}
	return e
}

var _ = Describe("encoding a fleet request", func() {
	It("keeps <, > and & of the ensure properties as written (json.Marshal escapes them again inside a json.RawMessage)", func() {
		fr := protocol.NewFleetRequest("enc-1", time.Now(), time.Minute)
		fr.Ensure, _ = protocol.NewEnsureRequest("exec", map[string]any{"name": "/bin/sh -c 'a && b < c'"})
		data, err := encodeRequest(fr, protocol.DefaultMaxBytes)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(data)).To(ContainSubstring(`"properties":{"name":"/bin/sh -c 'a && b < c'"}`))
	})
})
