package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// A manifest's YAML fault is named by its file and its own line, not by the
// line yaml.v3 reports (the line its enclosing mapping started on).
var _ = Describe("ccm-agent apply with a YAML fault", Ordered, func() {
	var bin string
	BeforeAll(func() {
		dir := GinkgoT().TempDir()
		bin = filepath.Join(dir, "ccm-agent")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/ccm-fleet/ccm/cmd/ccm-agent").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	It("names the file and line 7 for a key on line 7 indented one space short, and changes nothing", func() {
		dir := GinkgoT().TempDir()
		target := filepath.Join(dir, "motd")
		path := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(path, []byte("ccm:\n  resources:\n    - file:\n        "+target+":\n          ensure: present\n          owner: root\n         content: x\n"), 0o600)).To(Succeed())
		s, err := gexec.Start(exec.Command(bin, "apply", path), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s).WithTimeout(30 * time.Second).Should(gexec.Exit(1))
		Expect(string(s.Err.Contents())).To(Equal("ccm-agent: manifest " + path + ": invalid YAML at line 7, column 10: value is not allowed in this context\n"))
		Expect(string(s.Out.Contents())).To(BeEmpty())
		Expect(target).NotTo(BeAnExistingFile())
	})
})
