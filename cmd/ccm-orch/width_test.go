package main

import (
	"bytes"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
)

var _ = Describe("a text report at any fleet size", func() {
	// manyGroups is a result of n failure groups of one host each, after
	// one group of 10 stable hosts.
	manyGroups := func(n int) *orchestrator.Result {
		res := &orchestrator.Result{RequestID: "r1"}
		var stable []string
		for i := range 10 {
			stable = append(stable, fmt.Sprintf("ok-%02d", i))
		}
		res.Groups = append(res.Groups, orchestrator.Group{Resource: "exec#x", Outcome: "stable", Hosts: stable, Count: 10})
		for i := range n {
			id := fmt.Sprintf("bad-%02d", i)
			res.Groups = append(res.Groups, orchestrator.Group{Resource: "exec#x", Outcome: "failed", Message: fmt.Sprintf("exit code %d", i), Hosts: []string{id}, Count: 1})
		}
		res.Expected = append(stable, make([]string, n)...)
		res.Replied = len(res.Expected)
		return res
	}

	It("shows at most 20 groups, the problems, and counts the rest", func() {
		var buf bytes.Buffer
		renderResult(&buf, manyGroups(30), false)
		l := lines(buf.String())
		Expect(l).To(HaveLen(1 + 2*maxGroups + 1))
		Expect(l[0]).To(Equal("11 more groups of 20 hosts not shown (--verbose or --json lists every group)"))
		Expect(l[1]).To(Equal("1 host: exec#x failed: exit code 10"))
		Expect(l[len(l)-3]).To(Equal("1 host: exec#x failed: exit code 29"))
	})

	It("shows every group with --verbose", func() {
		var buf bytes.Buffer
		renderResult(&buf, manyGroups(30), true)
		Expect(lines(buf.String())).To(HaveLen(2*31 + 1))
	})

	It("keeps each resource of a manifest report to 20 groups", func() {
		res := manyGroups(30)
		res.Resources = []orchestrator.ResourceResult{{Resource: "exec#x", Groups: res.Groups}}
		var buf bytes.Buffer
		renderManifestResult(&buf, res, false)
		l := lines(buf.String())
		Expect(l[0]).To(HavePrefix("exec#x: 1 failed (exit code 10) on bad-10, "))
		Expect(l[0]).To(HaveSuffix(", 11 more groups of 20 hosts not shown (--verbose or --json lists every group)"))
		Expect(strings.Count(l[0], " failed (")).To(Equal(maxGroups))
	})

	It("wraps long lines at spaces on a terminal, never splitting a word", func() {
		var buf bytes.Buffer
		w := wrapWidth(&buf, 20)
		_, err := fmt.Fprint(w, "short\n"+
			"1 host: exec#x failed: exit code 3 on web17\n"+
			"    sim-0001, sim-0002, sim-0003, sim-0004\n"+
			"(request 0123456789abcdefghijklmnop, 3s)\n"+
			"ü ü ü ü ü ü ü ü ü ü ü ü\n"+
			"no newline at the end of this")
		Expect(err).NotTo(HaveOccurred())
		Expect(w.Flush()).To(Succeed())
		Expect(buf.String()).To(Equal("short\n" +
			"1 host: exec#x\n    failed: exit\n    code 3 on web17\n" +
			"    sim-0001,\n        sim-0002,\n        sim-0003,\n        sim-0004\n" +
			"(request\n    0123456789abcdefghijklmnop,\n    3s)\n" +
			"ü ü ü ü ü ü ü ü ü ü\n    ü ü\n" +
			"no newline at the\n    end of this"))
	})

	It("leaves lines alone when the output is not a terminal", func() {
		var buf bytes.Buffer
		Expect(terminalWidth(&buf)).To(Equal(0))
		w := wrapWidth(&buf, 0)
		long := strings.Repeat("x", 500) + "\n"
		_, _ = fmt.Fprint(w, long)
		Expect(w.Flush()).To(Succeed())
		Expect(buf.String()).To(Equal(long))
	})
})
