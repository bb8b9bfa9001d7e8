package main

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
)

var _ = Describe("rendering no replies by site", func() {
	It("heads the hosts that did not reply with the count per site and lists them per site", func() {
		res := &orchestrator.Result{
			RequestID: "r9", Expected: []string{"a1", "a2", "f1", "f2", "f3", "p1"}, Replied: 1,
			NoReply: []string{"a1", "f1", "f2", "f3", "p1"},
			NoReplyBySite: []orchestrator.SiteHosts{
				{Site: "fra1", Count: 3, Hosts: []string{"f1", "f2", "f3"}},
				{Site: "ams2", Count: 1, Hosts: []string{"a1"}},
				{Site: "", Count: 1, Hosts: []string{"p1"}},
			},
			Summary: orchestrator.Summary{Hosts: orchestrator.HostCounts{OK: 1, NoReply: 5}},
		}
		var buf bytes.Buffer
		renderTrailer(&buf, res, false)
		Expect(lines(buf.String())).To(Equal([]string{
			"5 hosts did not reply (site fra1: 3, site ams2: 1, (no site): 1):",
			"    site fra1: f1, f2, f3",
			"    site ams2: a1",
			"    (no site): p1",
			"6 expected, 1 replied: 1 ok, 0 changed, 0 failed, 5 no reply (request r9, 0s)",
		}))
	})

	It("lists the hosts that did not reply as before when no host has a site", func() {
		res := &orchestrator.Result{
			RequestID: "r8", Expected: []string{"a", "b"}, Replied: 1, NoReply: []string{"b"},
			Summary: orchestrator.Summary{Hosts: orchestrator.HostCounts{OK: 1, NoReply: 1}},
		}
		var buf bytes.Buffer
		renderTrailer(&buf, res, false)
		Expect(lines(buf.String())).To(Equal([]string{
			"1 host did not reply:",
			"    b",
			"2 expected, 1 replied: 1 ok, 0 changed, 0 failed, 1 no reply (request r8, 0s)",
		}))
	})
})
