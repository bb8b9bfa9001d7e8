package orchestrator_test

import (
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("StatusOf over AssignmentRuns", func() {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	entry := orchestrator.AssignmentEntry{Name: "web", Revision: 3,
		Assignment: &protocol.Assignment{Protocol: protocol.AssignmentProtocol, Name: "web", Interval: protocol.Duration(10 * time.Minute)}}

	// record is a host's history record of a run of assignment name at
	// revision rev, stored at t, with one file event.
	record := func(name string, rev uint64, host string, t time.Time, failed, noopChange bool) jsstore.Record {
		GinkgoHelper()
		id := name + "_r" + strconv.FormatUint(rev, 10) + "_" + strconv.FormatInt(t.Unix(), 36)
		reply := protocol.NewFleetReply(id, host, t)
		reply.Events = append(reply.Events, &protocol.TransactionEvent{Type: "file", Name: "/etc/motd", Failed: failed,
			Changed: noopChange, Noop: noopChange, Errors: map[bool][]string{true: {"disk full"}}[failed]})
		data, err := reply.Encode()
		Expect(err).NotTo(HaveOccurred())
		h := nats.Header{}
		if name != "" {
			h.Set(protocol.HeaderAssignment, name)
			h.Set(protocol.HeaderAssignmentRevision, strconv.FormatUint(rev, 10))
			h.Set(protocol.HeaderTrigger, "schedule")
		}
		return jsstore.Record{RequestID: id, Identity: host, Header: h, Data: data, Time: t}
	}
	live := map[string]map[string]any{"a": {}, "b": {}, "c": {}, "d": {}, "e": {}}

	It("keeps each host's newest run of an assignment, and no pushed run", func() {
		runs := orchestrator.NewAssignmentRuns()
		Expect(runs.Add(record("web", 3, "a", now.Add(-time.Minute), false, false))).To(BeTrue())
		Expect(runs.Add(record("web", 3, "a", now.Add(-5*time.Minute), true, false))).To(BeFalse(), "an older run arriving later")
		Expect(runs.Add(record("", 0, "a", now, true, false))).To(BeFalse(), "a pushed request's record")
		rep, err := orchestrator.StatusOf([]orchestrator.AssignmentEntry{entry}, map[string]map[string]any{"a": {}}, runs, now, orchestrator.StatusOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Assignments[0].Hosts).To(ConsistOf(HaveField("State", orchestrator.StateConverged)))
	})

	It("judges every state as ccm-orch status does, within twice the interval", func() {
		runs := orchestrator.NewAssignmentRuns()
		runs.Add(record("web", 3, "a", now.Add(-time.Minute), false, false))
		runs.Add(record("web", 3, "b", now.Add(-time.Minute), true, false))
		runs.Add(record("web", 2, "c", now.Add(-time.Minute), false, false))
		runs.Add(record("web", 3, "d", now.Add(-time.Hour), false, false))
		runs.Add(record("web", 3, "e", now.Add(-time.Minute), false, true))
		runs.Add(record("web", 3, "gone", now.Add(-time.Minute), false, false))
		rep, err := orchestrator.StatusOf([]orchestrator.AssignmentEntry{entry}, live, runs, now, orchestrator.StatusOptions{})
		Expect(err).NotTo(HaveOccurred())
		states := map[string]string{}
		messages := map[string]string{}
		for _, h := range rep.Assignments[0].Hosts {
			states[h.Identity], messages[h.Identity] = h.State, h.Message
		}
		Expect(states).To(Equal(map[string]string{"a": "converged", "b": "failed", "c": "pending", "d": "stale", "e": "drift", "gone": "stale"}))
		Expect(messages["b"]).To(Equal("file#/etc/motd: disk full"))
		Expect(messages["d"]).To(Equal("no run recorded in the last 20m0s (twice the interval)"), "a run older than the window is not seen, as when the CLI reads the window")
		Expect(messages["gone"]).To(ContainSubstring("no longer in the node registry"))
		Expect(rep.ExitCode).To(Equal(protocol.ExitFailed))
	})

	It("keeps only the hosts a narrowing keeps, the same sample for every assignment", func() {
		runs := orchestrator.NewAssignmentRuns()
		for _, h := range []string{"a", "b", "c", "d", "e", "gone"} {
			runs.Add(record("web", 3, h, now.Add(-time.Minute), false, false))
		}
		other := orchestrator.AssignmentEntry{Name: "db", Revision: 1,
			Assignment: &protocol.Assignment{Protocol: protocol.AssignmentProtocol, Name: "db", Interval: protocol.Duration(10 * time.Minute)}}
		hostsOf := func(as orchestrator.AssignmentStatus) []string {
			var out []string
			for _, h := range as.Hosts {
				out = append(out, h.Identity)
			}
			return out
		}

		rep, err := orchestrator.StatusOf([]orchestrator.AssignmentEntry{entry}, live, runs, now,
			orchestrator.StatusOptions{Narrow: &orchestrator.Narrowing{Only: []string{"b", "gone", "zz"}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(hostsOf(rep.Assignments[0])).To(Equal([]string{"b", "gone"}))
		Expect(rep.Sample).To(BeNil())

		rep, err = orchestrator.StatusOf([]orchestrator.AssignmentEntry{entry, other}, live, runs, now,
			orchestrator.StatusOptions{Narrow: &orchestrator.Narrowing{Sample: 2, Seed: 9}})
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Sample).To(Equal(&orchestrator.SampleReport{Seed: 9, Of: 6, Kept: 2}))
		web, db := rep.Assignments[0], rep.Assignments[1]
		Expect(web.Name).To(Equal("web"))
		Expect(hostsOf(web)).To(HaveLen(2))
		Expect(hostsOf(db)).NotTo(BeEmpty())
		Expect(hostsOf(web)).To(ContainElements(hostsOf(db)), "db shows the sampled hosts it selects (it has no run on the host gone from the registry)")

		_, err = orchestrator.StatusOf([]orchestrator.AssignmentEntry{entry}, live, runs, now,
			orchestrator.StatusOptions{Narrow: &orchestrator.Narrowing{Sample: -1}})
		Expect(errors.Is(err, orchestrator.ErrInvalid)).To(BeTrue())
	})

	It("shows a host that quarantined the current revision as quarantined, with the reason, and one that quarantined an older revision as pending", func() {
		quarantined := func(rev uint64, host string) jsstore.Record {
			GinkgoHelper()
			r := record("web", rev, host, now.Add(-time.Minute), false, false)
			reply := protocol.NewFleetReply(r.RequestID, host, now.Add(-time.Minute))
			reply.Error = protocol.NewError(protocol.CodeQuarantined, "the agent stopped 2 times while applying revision %d of assignment web", rev)
			data, err := reply.Encode()
			Expect(err).NotTo(HaveOccurred())
			r.Data = data
			return r
		}
		runs := orchestrator.NewAssignmentRuns()
		runs.Add(quarantined(3, "a"))
		runs.Add(quarantined(2, "b"))
		rep, err := orchestrator.StatusOf([]orchestrator.AssignmentEntry{entry}, map[string]map[string]any{"a": {}, "b": {}}, runs, now, orchestrator.StatusOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Assignments[0].Hosts).To(ConsistOf(
			And(HaveField("Identity", "a"), HaveField("State", orchestrator.StateQuarantined), HaveField("Message", "the agent stopped 2 times while applying revision 3 of assignment web")),
			And(HaveField("Identity", "b"), HaveField("State", orchestrator.StatePending), HaveField("Message", ContainSubstring("last ran revision 2, quarantined there")))))
		Expect(rep.Assignments[0].Counts).To(HaveKeyWithValue(orchestrator.StateQuarantined, 1))
		Expect(rep.ExitCode).To(Equal(protocol.ExitFailed))
	})

	It("names an assignment it does not have", func() {
		_, err := orchestrator.StatusOf([]orchestrator.AssignmentEntry{entry}, live, orchestrator.NewAssignmentRuns(), now, orchestrator.StatusOptions{Assignment: "db"})
		Expect(errors.Is(err, orchestrator.ErrNoAssignment)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(ContainSubstring(`"db"`)))
	})
})
