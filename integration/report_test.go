package integration_test

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The report of a failure on 300 hosts", Ordered, func() {
	var (
		f    *fleet
		path string
	)
	BeforeAll(func() {
		f = startFleet(300, "rep", nil, "os=debian,rhel")
		// The directory does not exist, so every host fails naming its own path.
		path = filepath.Join(GinkgoT().TempDir(), "missing", "{{ lookup('facts.identity') }}", "motd")
	})
	args := func(extra ...string) []string {
		return append([]string{"ensure", "file", path, "--content", "hi", "--owner", "root", "--group", "root", "--mode", "0644"}, extra...)
	}

	It("prints a handful of lines: one group of the failure's shape with a few example hosts", func() {
		code, out, errOut := f.orch(args()...)
		Expect(code).To(Equal(2), errOut)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		Expect(len(lines)).To(BeNumerically("<=", 25), out)
		Expect(lines).To(HaveLen(3), out)
		Expect(lines[0]).To(HavePrefix("300 hosts: file#" + path + " failed: "))
		Expect(lines[0]).To(ContainSubstring("/missing/<host>/motd"))
		Expect(lines[1]).To(HavePrefix("    rep-0001, rep-0002, "))
		Expect(lines[1]).To(HaveSuffix(" and 280 more"))
		Expect(lines[2]).To(HavePrefix("300 expected, 300 replied: 0 ok, 0 changed, 300 failed, 0 no reply"))
	})

	It("keeps every host's own message in --json", func() {
		code, doc := f.orchJSON(args()...)
		Expect(code).To(Equal(2))
		groups := doc["groups"].([]any)
		Expect(groups).To(HaveLen(1))
		Expect(groups[0]).To(HaveKeyWithValue("count", BeNumerically("==", 300)))
		hosts := doc["hosts"].([]any)
		Expect(hosts).To(HaveLen(300))
		for _, h := range hosts {
			h := h.(map[string]any)
			ev := h["events"].([]any)[0].(map[string]any)
			Expect(ev["error"]).To(ContainElement(ContainSubstring("/missing/" + h["identity"].(string) + "/motd")))
		}
	})
})
