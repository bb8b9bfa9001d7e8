package main

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
)

// fleetTimeout bounds waits on a broker starting or stopping.
const fleetTimeout = 30 * time.Second

var _ = Describe("rendering", func() {
	It("caps the listed names and says how many more there are", func() {
		var hosts []string
		for i := range 23 {
			hosts = append(hosts, fmt.Sprintf("h%02d", i))
		}
		Expect(listHosts(hosts[:2])).To(Equal("h00, h01"))
		Expect(listHosts(hosts)).To(HavePrefix("h00, h01, "))
		Expect(listHosts(hosts)).To(HaveSuffix("h19 and 3 more"))
	})

	It("counts hosts that replied without being asked in the summary line, besides listing them", func() {
		res := &orchestrator.Result{
			RequestID: "r3", Expected: []string{"a"}, Replied: 1, Unexpected: []string{"x", "y"},
			Hosts:   []orchestrator.HostResult{{Identity: "a", Outcome: orchestrator.OutcomeOK}},
			Summary: orchestrator.Summary{Hosts: orchestrator.HostCounts{OK: 1}},
		}
		var buf bytes.Buffer
		renderTrailer(&buf, res, false)
		Expect(buf.String()).To(ContainSubstring("2 hosts replied without being asked:\n    x, y\n"))
		Expect(buf.String()).To(ContainSubstring("1 expected, 1 replied: 1 ok, 0 changed, 0 failed, 0 no reply, 2 replied without being asked"))
		Expect(buf.String()).NotTo(ContainSubstring("discovery"), "hosts given: discovery was not the reason")
	})

	It("says why hosts replied unasked after discovery, and how to find them", func() {
		for discovery, want := range map[string]string{
			"broadcast": "2 hosts replied without being asked:\n    x, y\n    (the broadcast discovery round ended before they answered, so their results are not counted: --discovery registry reads the node registry instead, and a --discovery-quiet as long as --discovery-timeout waits for the whole round)\n",
			"registry":  "2 hosts replied without being asked:\n    x, y\n    (the node registry has no entry for them that the filter selects, so their results are not counted: --discovery broadcast asks the hosts themselves)\n",
		} {
			res := &orchestrator.Result{
				RequestID: "r4", Expected: []string{"a"}, Replied: 1, Unexpected: []string{"x", "y"}, Discovery: discovery,
				Hosts:   []orchestrator.HostResult{{Identity: "a", Outcome: orchestrator.OutcomeOK}},
				Summary: orchestrator.Summary{Hosts: orchestrator.HostCounts{OK: 1}},
			}
			var buf bytes.Buffer
			renderTrailer(&buf, res, false)
			Expect(buf.String()).To(ContainSubstring(want), discovery)
		}
	})

	It("says which results were read from history and which hosts may not have been asked", func() {
		res := &orchestrator.Result{
			RequestID: "r2", Expected: []string{"a", "b", "c"}, Replied: 2, NoReply: []string{"c"}, Unconfirmed: []string{"c"},
			Hosts: []orchestrator.HostResult{
				{Identity: "a", Outcome: orchestrator.OutcomeChanged},
				{Identity: "b", Outcome: orchestrator.OutcomeChanged, Source: orchestrator.SourceHistory},
				{Identity: "c", Outcome: orchestrator.OutcomeNoReply},
			},
			Summary: orchestrator.Summary{Hosts: orchestrator.HostCounts{Changed: 2, NoReply: 1}, FromHistory: 1},
		}
		var buf bytes.Buffer
		renderResult(&buf, res, false)
		Expect(lines(buf.String())).To(Equal([]string{
			"1 host did not reply:",
			"    c",
			"1 host may not have been asked (the connection dropped before the server confirmed the request):",
			"    c",
			"3 expected, 2 replied: 0 ok, 2 changed, 0 failed, 1 no reply; 1 result read from history after the connection came back (request r2, 0s)",
		}))
	})

	DescribeTable("describes a group in one line",
		func(g orchestrator.Group, want string) { Expect(describeGroup(g)).To(Equal(want)) },
		Entry("stable", orchestrator.Group{Resource: "file#/etc/motd", Outcome: "stable"}, "file#/etc/motd stable"),
		Entry("failed", orchestrator.Group{Resource: "file#/etc/motd", Outcome: "failed", Message: "permission denied"}, "file#/etc/motd failed: permission denied"),
		Entry("would change", orchestrator.Group{Resource: "service#nginx", Outcome: "would_change", Message: "Would have started"}, "service#nginx would change: Would have started"),
		Entry("request error", orchestrator.Group{Outcome: orchestrator.GroupError, Message: "busy: 64 requests are already waiting"}, "request refused: busy: 64 requests are already waiting"),
	)

	It("renders a manifest run per resource, naming the hosts of every outcome but stable", func() {
		var many []string
		for i := range 25 {
			many = append(many, fmt.Sprintf("w%02d", i))
		}
		motdStable := orchestrator.Group{Resource: "file#/etc/motd", Outcome: "stable", Hosts: []string{"a"}, Count: 412}
		motdDrift := orchestrator.Group{Resource: "file#/etc/motd", Outcome: "would_change", Message: "Would have changed the content", Hosts: []string{"web17", "web23", "web31"}, Count: 3}
		svcStable := orchestrator.Group{Resource: "service#nginx", Outcome: "stable", Hosts: []string{"a"}, Count: 415}
		svcFailed := orchestrator.Group{Resource: "service#nginx", Outcome: "failed", Message: "exit 1", Hosts: many, Count: len(many)}
		refused := orchestrator.Group{Outcome: orchestrator.GroupError, Message: "busy: full", Hosts: []string{"x1", "x2"}, Count: 2}
		res := &orchestrator.Result{
			RequestID: "r1", Noop: true, Expected: make([]string, 443), Replied: 442, NoReply: []string{"gone"},
			Groups: []orchestrator.Group{motdStable, svcStable, motdDrift, svcFailed, refused},
			Resources: []orchestrator.ResourceResult{
				{Resource: "file#/etc/motd", Groups: []orchestrator.Group{motdStable, motdDrift}},
				{Resource: "service#nginx", Groups: []orchestrator.Group{svcStable, svcFailed}},
			},
			Summary: orchestrator.Summary{
				Hosts:     orchestrator.HostCounts{OK: 412, WouldChange: 3, Failed: 27, NoReply: 1},
				Resources: orchestrator.ResourceCounts{Stable: 827, WouldChange: 3, Failed: 25},
			},
		}
		var buf bytes.Buffer
		renderManifestResult(&buf, res, false)
		Expect(lines(buf.String())).To(Equal([]string{
			"file#/etc/motd: 412 stable, 3 would change (Would have changed the content) on web17, web23, web31",
			"service#nginx: 415 stable, 25 failed (exit 1) on " + listHosts(many),
			"request refused: 2 hosts (busy: full) on x1, x2",
			"1 host did not reply:",
			"    gone",
			"443 expected, 442 replied: 412 ok, 0 changed, 3 would change, 27 failed, 1 no reply; resources: 827 stable, 0 changed, 3 would change, 25 failed, 0 skipped (request r1, 0s)",
		}))
		Expect(listHosts(many)).To(HaveSuffix("w19 and 5 more"))
	})

	It("counts hosts in words", func() {
		Expect(countHosts(1)).To(Equal("1 host"))
		Expect(countHosts(0)).To(Equal("0 hosts"))
		Expect(countHosts(812)).To(Equal("812 hosts"))
	})

	It("parses --batch sizes and percentages", func() {
		for in, want := range map[string][2]int{"": {0, 0}, "5": {5, 0}, "25%": {0, 25}, "100%": {0, 100}} {
			size, pct, err := parseBatch(in)
			Expect(err).NotTo(HaveOccurred())
			Expect([2]int{size, pct}).To(Equal(want), in)
		}
		for _, bad := range []string{"0", "-1", "x", "0%", "101%", "%"} {
			_, _, err := parseBatch(bad)
			Expect(err).To(HaveOccurred(), bad)
		}
	})
})

var _ = Describe("progress", func() {
	It("is off when stderr is not a terminal", func() {
		Expect(newProgress(&bytes.Buffer{}, false)).To(BeNil())
		var p *progress
		p.clear() // a nil progress is safe to clear
	})

	It("shows replied/expected, the outcomes so far and the time, redrawing at most every 100ms, and erases itself", func() {
		var buf bytes.Buffer
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { return at }
		p := startProgress(&buf, true, clock)
		p.update(0, 3)
		at = at.Add(20 * time.Millisecond)
		p.reply(orchestrator.HostResult{Identity: "a", Outcome: orchestrator.OutcomeWouldChange})
		p.update(1, 3) // too soon after the last drawing: not drawn
		at = at.Add(1200 * time.Millisecond)
		p.reply(orchestrator.HostResult{Identity: "b", Outcome: orchestrator.OutcomeFailed})
		p.update(2, 3)
		p.reply(orchestrator.HostResult{Identity: "c", Outcome: orchestrator.OutcomeOK})
		p.update(3, 3) // the last always draws
		p.clear()
		frames := strings.Split(strings.TrimPrefix(buf.String(), "\r"), "\r")
		Expect(frames).To(Equal([]string{
			"0/3 replied, 0 ok, 0 changed, 0 would change, 0 failed (0s)\033[K",
			"2/3 replied, 0 ok, 0 changed, 1 would change, 1 failed (1.2s)\033[K",
			"3/3 replied, 1 ok, 0 changed, 1 would change, 1 failed (1.2s)\033[K",
			"\033[K",
		}))
	})
})
