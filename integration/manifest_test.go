package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("A manifest on a fleet of 30 simulated agents", Ordered, func() {
	var (
		f                           *fleet
		site, target                string
		dirRef, motdRef, releaseRef string
	)

	BeforeAll(func() {
		f = startFleet(30, "web", map[string]any{"dc": "ams"}, "os=debian,rhel")
		target = GinkgoT().TempDir()
		dir := GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(dir, "files"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "files", "release"), []byte("release 7\n"), 0o644)).To(Succeed())
		base := target + "/{{ lookup('facts.identity') }}"
		site = filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(site, []byte(`
data:
  motd: "Managed by CCM"
ccm:
  resources:
    - file:
        - defaults:
            owner: root
            group: root
            mode: "0644"
        - "`+base+`":
            ensure: directory
            mode: "0755"
        - "`+base+`/motd":
            content: "{{ lookup('data.motd') }} on {{ lookup('facts.identity') }} ({{ lookup('facts.os') }})\n"
            require: ["file#`+base+`"]
        - "`+base+`/release":
            source: files/release
            require: ["file#`+base+`"]
`), 0o644)).To(Succeed())
		dirRef, motdRef, releaseRef = "file#"+base, "file#"+base+"/motd", "file#"+base+"/release"
	})

	// resourceLine returns the output line of ref.
	resourceLine := func(out, ref string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, ref+": ") {
				return l
			}
		}
		Fail(fmt.Sprintf("no line for %s in:\n%s", ref, out))
		return ""
	}

	It("applies it: every resource changes on every host, exit 0", func() {
		code, out, errOut := f.orch("apply", site)
		GinkgoWriter.Print(out)
		Expect(code).To(Equal(0), errOut)
		for _, ref := range []string{dirRef, motdRef, releaseRef} {
			Expect(resourceLine(out, ref)).To(HavePrefix(ref + ": 30 changed on web-0001, web-0002, "))
		}
		Expect(out).To(ContainSubstring("30 expected, 30 replied: 0 ok, 30 changed, 0 failed, 0 no reply; resources: 0 stable, 90 changed"))
		for id, facts := range f.factsOf() {
			Expect(os.ReadFile(filepath.Join(target, id, "motd"))).To(Equal([]byte(fmt.Sprintf("Managed by CCM on %s (%s)\n", id, facts["os"]))))
			Expect(os.ReadFile(filepath.Join(target, id, "release"))).To(Equal([]byte("release 7\n")))
		}
	})

	It("audits it with zero drift, exit 0", func() {
		code, out, errOut := f.orch("audit", site)
		GinkgoWriter.Print(out)
		Expect(code).To(Equal(0), errOut)
		for _, ref := range []string{dirRef, motdRef, releaseRef} {
			Expect(resourceLine(out, ref)).To(Equal(ref + ": 30 stable"))
		}
		Expect(out).To(ContainSubstring("30 ok, 0 changed, 0 would change, 0 failed, 0 no reply"))
	})

	It("reports exactly the 3 tampered hosts under the right resource, exit 5, changing nothing", func() {
		tampered := []string{"web-0004", "web-0011", "web-0027"}
		for _, id := range tampered {
			Expect(os.WriteFile(filepath.Join(target, id, "motd"), []byte("hand edited\n"), 0o644)).To(Succeed())
		}
		code, out, errOut := f.orch("audit", site)
		GinkgoWriter.Print(out)
		Expect(code).To(Equal(5), errOut)
		Expect(resourceLine(out, dirRef)).To(Equal(dirRef + ": 30 stable"))
		Expect(resourceLine(out, releaseRef)).To(Equal(releaseRef + ": 30 stable"))
		Expect(resourceLine(out, motdRef)).To(MatchRegexp("^" + regexp.QuoteMeta(motdRef) +
			`: 27 stable, 3 would change \(Would have created the file: [^)]*content[^)]*\) on web-0004, web-0011, web-0027$`))
		Expect(out).To(ContainSubstring("27 ok, 0 changed, 3 would change, 0 failed, 0 no reply"))

		code, doc := f.orchJSON("audit", site)
		Expect(code).To(Equal(5))
		var drift []map[string]any
		for _, g := range doc["groups"].([]any) {
			if g := g.(map[string]any); g["outcome"] != "stable" {
				drift = append(drift, g)
			}
		}
		Expect(drift).To(HaveLen(1))
		Expect(drift[0]).To(HaveKeyWithValue("resource", motdRef))
		Expect(drift[0]).To(HaveKeyWithValue("outcome", "would_change"))
		Expect(drift[0]).To(HaveKeyWithValue("hosts", []any{"web-0004", "web-0011", "web-0027"}))
		Expect(drift[0]["message"]).To(HavePrefix("Would have created the file: "))
		Expect(doc["summary"]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("would_change", 3.0)))
		Expect(doc["summary"]).To(HaveKeyWithValue("resources", HaveKeyWithValue("would_change", 3.0)))
		Expect(doc["resources"]).To(HaveLen(3))

		for _, id := range tampered {
			Expect(os.ReadFile(filepath.Join(target, id, "motd"))).To(Equal([]byte("hand edited\n")), "the audit changed nothing")
		}
	})

	It("repairs them with apply, after which the audit is clean again", func() {
		code, out, errOut := f.orch("apply", site)
		GinkgoWriter.Print(out)
		Expect(code).To(Equal(0), errOut)
		Expect(resourceLine(out, motdRef)).To(Equal(motdRef + ": 27 stable, 3 changed on web-0004, web-0011, web-0027"))
		Expect(resourceLine(out, dirRef)).To(Equal(dirRef + ": 30 stable"))
		for _, id := range []string{"web-0004", "web-0011", "web-0027"} {
			Expect(os.ReadFile(filepath.Join(target, id, "motd"))).To(HavePrefix("Managed by CCM on " + id))
		}

		code, doc := f.orchJSON("audit", site)
		Expect(code).To(Equal(0))
		Expect(doc["summary"]).To(HaveKeyWithValue("resources", HaveKeyWithValue("stable", 90.0)))
		Expect(doc["summary"]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("ok", 30.0)))
	})
})
