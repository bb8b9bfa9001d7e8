package orchestrator_test

import (
	"errors"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
)

var _ = Describe("Narrowing", func() {
	hosts := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("web%03d", i)
		}
		return out
	}

	It("keeps every host when it is nil or zero", func() {
		var n *orchestrator.Narrowing
		kept, rep := n.Apply([]string{"b", "a", "b"})
		Expect(kept).To(Equal([]string{"a", "b"}))
		Expect(rep).To(BeNil())
		kept, rep = (&orchestrator.Narrowing{}).Apply(hosts(5))
		Expect(kept).To(Equal(hosts(5)))
		Expect(rep).To(BeNil())
	})

	It("keeps only the listed hosts that were selected", func() {
		n := &orchestrator.Narrowing{Only: []string{"web001", "web003", "db1"}}
		kept, _ := n.Apply(hosts(5))
		Expect(kept).To(Equal([]string{"web001", "web003"}))
		kept, _ = (&orchestrator.Narrowing{Only: []string{}}).Apply(hosts(5))
		Expect(kept).To(BeEmpty())
	})

	It("samples the same hosts for the same seed, other hosts for another", func() {
		a, rep := (&orchestrator.Narrowing{Sample: 10, Seed: 42}).Apply(hosts(100))
		Expect(a).To(HaveLen(10))
		Expect(slices.IsSorted(a)).To(BeTrue())
		Expect(rep).To(Equal(&orchestrator.SampleReport{Seed: 42, Of: 100, Kept: 10}))
		reversed := hosts(100)
		slices.Reverse(reversed)
		again, _ := (&orchestrator.Narrowing{Sample: 10, Seed: 42}).Apply(reversed)
		Expect(again).To(Equal(a), "the order hosts were found in does not matter")
		other, _ := (&orchestrator.Narrowing{Sample: 10, Seed: 43}).Apply(hosts(100))
		Expect(other).NotTo(Equal(a))
	})

	It("keeps a sampled host in the sample when other hosts join the fleet", func() {
		small, _ := (&orchestrator.Narrowing{SamplePercent: 10, Seed: 7}).Apply(hosts(100))
		grown := append(hosts(100), "zz1", "zz2", "zz3", "zz4", "zz5", "zz6", "zz7", "zz8", "zz9", "zz10")
		big, _ := (&orchestrator.Narrowing{SamplePercent: 10, Seed: 7}).Apply(grown)
		Expect(big).To(HaveLen(11))
		kept := 0
		for _, h := range small {
			if slices.Contains(big, h) {
				kept++
			}
		}
		Expect(kept).To(BeNumerically(">=", 5), "most of the first sample stays: a host's rank does not depend on the others")
	})

	DescribeTable("sample sizes",
		func(n orchestrator.Narrowing, of, want int) {
			kept, rep := n.Apply(hosts(of))
			Expect(kept).To(HaveLen(want))
			Expect(rep.Of).To(Equal(of))
			Expect(rep.Kept).To(Equal(want))
		},
		Entry("a count smaller than the hosts", orchestrator.Narrowing{Sample: 3}, 10, 3),
		Entry("a count larger than the hosts keeps them all", orchestrator.Narrowing{Sample: 30}, 10, 10),
		Entry("a percentage rounds up", orchestrator.Narrowing{SamplePercent: 25}, 10, 3),
		Entry("a percentage keeps at least one host", orchestrator.Narrowing{SamplePercent: 1}, 10, 1),
		Entry("100% keeps every host", orchestrator.Narrowing{SamplePercent: 100}, 10, 10),
		Entry("nothing selected, nothing kept", orchestrator.Narrowing{SamplePercent: 50}, 0, 0),
	)

	It("samples after keeping the listed hosts", func() {
		n := &orchestrator.Narrowing{Only: hosts(4), Sample: 2, Seed: 1}
		kept, rep := n.Apply(hosts(50))
		Expect(kept).To(HaveLen(2))
		Expect(hosts(4)).To(ContainElements(kept))
		Expect(rep.Of).To(Equal(4))
	})

	It("keeps the nodes of the identities it keeps", func() {
		nodes := []orchestrator.Node{{Identity: "a", Version: "1"}, {Identity: "b", Version: "2"}, {Identity: "c", Version: "3"}}
		kept, _ := (&orchestrator.Narrowing{Only: []string{"c", "a"}}).ApplyNodes(nodes)
		Expect(kept).To(Equal([]orchestrator.Node{{Identity: "a", Version: "1"}, {Identity: "c", Version: "3"}}))
	})

	DescribeTable("refuses what cannot be meant",
		func(n orchestrator.Narrowing, want string) {
			err := n.Validate()
			Expect(errors.Is(err, orchestrator.ErrInvalid)).To(BeTrue())
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("a negative size", orchestrator.Narrowing{Sample: -1}, "sample size -1 is negative"),
		Entry("a percentage over 100", orchestrator.Narrowing{SamplePercent: 101}, "between 1 and 100"),
		Entry("a size and a percentage", orchestrator.Narrowing{Sample: 2, SamplePercent: 10}, "not both"),
		Entry("an invalid identity", orchestrator.Narrowing{Only: []string{"web 1"}}, `identity "web 1"`),
	)
})
