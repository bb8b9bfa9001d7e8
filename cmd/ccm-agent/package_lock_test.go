package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("--package-lock-timeout", func() {
	It("is taken by ensure, before or after the type, and by apply", func() {
		dir := GinkgoT().TempDir()
		motd := filepath.Join(dir, "motd")
		code, out, errOut := agent("ensure", "--package-lock-timeout", "30s", "file", motd, "--content", "hi")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("changed"))
		code, out, errOut = agent("ensure", "file", motd, "--content", "hi", "--package-lock-timeout", "5m")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("stable"))

		m := filepath.Join(dir, "m.yaml")
		Expect(os.WriteFile(m, []byte("ccm:\n  resources:\n    - file:\n        - "+motd+": {content: hi, owner: root, group: root, mode: \"0644\"}\n"), 0o600)).To(Succeed())
		code, out, errOut = agent("apply", m, "--package-lock-timeout", "10s")
		Expect(code).To(Equal(0), errOut+out)
	})

	It("refuses what is not a duration, naming the flag", func() {
		code, _, errOut := agent("ensure", "--package-lock-timeout", "soon", "file", filepath.Join(GinkgoT().TempDir(), "x"))
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`--package-lock-timeout: "soon" is not a duration`))
	})
})
