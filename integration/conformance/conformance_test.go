package conformance_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/integration/conformance"
)

var (
	cases, _    = conformance.Load("testdata/cases.yaml")
	recording   conformance.Recording
	agent, base string
	comingFrom  string
	counts      = map[string]int{}
)

var _ = BeforeSuite(func() {
	_, err := conformance.Load("testdata/cases.yaml")
	Expect(err).NotTo(HaveOccurred())
	recording, err = conformance.LoadRecording("testdata/ccm.json")
	Expect(err).NotTo(HaveOccurred())
	Expect(recording.CCM.Commit).NotTo(BeEmpty(), "the recording says which CCM it came from")
	agent, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
	Expect(err).NotTo(HaveOccurred())
	base = GinkgoT().TempDir()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "coming-from-ccm.md"))
	Expect(err).NotTo(HaveOccurred())
	comingFrom = string(doc)
})

var _ = AfterSuite(func() {
	gexec.CleanupBuildArtifacts()
	AddReportEntry("conformance table", fmt.Sprintf("%d cases: %d same, %d documented differences, %d where CCM contradicts its documentation (CCM %s, recorded %s)",
		len(cases), counts[conformance.Same], counts[conformance.Differs], counts[conformance.CCMBug], recording.CCM.Commit, recording.CCM.Recorded))
})

var _ = Describe("ccm-agent against the conformance table recorded from CCM", func() {
	It("compares noop messages up to what ccm-agent adds after CCM's sentence, which docs/coming-from-ccm.md says", func() {
		Expect(comingFrom).To(ContainSubstring(conformance.NoopDetailRow))
	})

	It("has a recording of every case and no recording of a case that is gone", func() {
		names := map[string]bool{}
		for _, c := range cases {
			names[c.Name] = true
			Expect(recording.Cases).To(HaveKey(c.Name), "record it: see package conformance")
		}
		for n := range recording.Cases {
			Expect(names).To(HaveKey(n), "recorded, but not in the table")
		}
	})

	for _, c := range cases {
		It(c.Name+" ("+c.Verdict+")", func(ctx SpecContext) {
			ours, err := conformance.Run(ctx, agent, base, c, true)
			Expect(err).NotTo(HaveOccurred())
			ccm := recording.Cases[c.Name]
			diff := conformance.Diff(ccm, ours)
			counts[c.Verdict]++
			explain := func() string {
				var b strings.Builder
				for i := range ours {
					fmt.Fprintf(&b, "\n--- run %d, ccm-agent:\n%s--- CCM:\n%s", i+1, ours[i].Output, ccm[min(i, len(ccm)-1)].Output)
				}
				return b.String()
			}
			var expected, unexpected []conformance.Difference
			for _, d := range diff {
				if slices.Contains(c.DifferIn, d.Aspect) {
					expected = append(expected, d)
				} else {
					unexpected = append(unexpected, d)
				}
			}
			Expect(unexpected).To(BeEmpty(), "ccm-agent differs from CCM:%s", explain())
			if c.Verdict != conformance.Same {
				Expect(expected).NotTo(BeEmpty(), "ccm-agent now does what CCM does in %v: make the case's verdict same (and drop the row if nothing else needs it)", c.DifferIn)
				Expect(comingFrom).To(ContainSubstring(c.Doc), "docs/coming-from-ccm.md must say this (%s)", c.Why)
			}
			for name, content := range c.Expect {
				Expect(ours[len(ours)-1].Files).To(HaveKeyWithValue(name, HaveField("Content", content)), "as CCM's documentation shows:%s", explain())
			}
		})
	}
})
