package main

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt/apttest"
)

// ranCommand is what the apt provider logs at debug level before each
// command it runs.
const ranCommand = "running package command"

var _ = Describe("ccm-agent ensure package", func() {
	It("installs, is stable, reports a downgrade under noop, then downgrades, upgrades and removes a package it built",
		Label("real"), func(sctx SpecContext) {
			if reason, ok := apttest.Available(); !ok {
				Skip(reason)
			}
			// A bound, not a speed check: five apt runs took 50 s each on a
			// 2-core machine at load 30 (CI shares its cores with nothing, but
			// a developer's may not).
			ctx, cancel := context.WithTimeout(sctx, 8*time.Minute)
			defer cancel()

			By("building every version of the test package into a local apt repository")
			repo, err := apttest.Setup(ctx, GinkgoT())
			Expect(err).NotTo(HaveOccurred())
			pkg, versions := repo.PackageName(), repo.Versions()
			Expect(versions).To(Equal([]string{"1.0-1", "2.0-1"}))
			older, newer := versions[0], versions[1]
			ref := "package#" + pkg
			installed := func() string {
				GinkgoHelper()
				v, err := repo.InstalledVersion(ctx)
				Expect(err).NotTo(HaveOccurred())
				return v
			}
			Expect(installed()).To(BeEmpty())

			By("ensure package installs the candidate")
			code, out, errOut := agent("ensure", "package", pkg)
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(ContainSubstring(ref + " changed (" + newer + ")"))
			Expect(installed()).To(Equal(newer))

			By("ensure package again is stable")
			code, out, errOut = agent("ensure", "package", pkg)
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(ContainSubstring(ref + " stable (" + newer + ")"))
			Expect(installed()).To(Equal(newer))

			By("noop ensure of the older version only reports the downgrade and runs only queries (dpkg-query, apt-cache)")
			code, out, errOut = agent("--debug", "ensure", "package", pkg, older, "--noop")
			Expect(code).To(Equal(5), errOut)
			Expect(out).To(ContainSubstring(ref + " would change: Would have downgraded to " + older))
			Expect(errOut).To(ContainSubstring(ranCommand))
			Expect(errOut).To(ContainSubstring(`command="dpkg-query `))
			Expect(errOut).To(ContainSubstring(`command="apt-cache `))
			Expect(errOut).NotTo(ContainSubstring(`command="apt-get `))
			Expect(installed()).To(Equal(newer))

			By("ensure of the older version downgrades")
			code, out, errOut = agent("ensure", "package", pkg, older)
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(ContainSubstring(ref + " changed (" + older + ")"))
			Expect(installed()).To(Equal(older))
			Expect(os.ReadFile(repo.DataFile())).To(Equal([]byte(older + "\n")))

			By("ensure of the newer version upgrades")
			code, out, errOut = agent("ensure", "package", pkg, newer)
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(ContainSubstring(ref + " changed (" + newer + ")"))
			Expect(installed()).To(Equal(newer))

			By("a refused name leaves the installed package alone")
			for _, args := range [][]string{{"--", "-oDebug=1"}, {"nginx;id"}} {
				code, out, errOut = agent(append([]string{"ensure", "package"}, args...)...)
				Expect(code).To(Equal(1), "%v: %s", args, out)
				Expect(errOut).To(ContainSubstring("package name"))
				Expect(installed()).To(Equal(newer))
			}

			By("ensure absent removes it")
			code, out, errOut = agent("ensure", "package", pkg, "absent")
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(ContainSubstring(ref + " changed (absent)"))
			Expect(installed()).To(BeEmpty())
			Expect(repo.DpkgState(ctx)).To(Equal(newer + " config-files"))
		}, NodeTimeout(4*time.Minute))

	DescribeTable("refuses an injection name with exit 1 before any package command runs",
		func(problem string, args ...string) {
			code, out, errOut := agent(append([]string{"--debug", "ensure", "package"}, args...)...)
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(ContainSubstring(problem))
			Expect(errOut).NotTo(ContainSubstring(ranCommand))
		},
		Entry("an option given as the name", `package name "-oDebug=1" starts with a hyphen`, "--", "-oDebug=1"),
		Entry("an option where the name goes, read as a flag", `unknown short flag '-o'`, "-oDebug=1"),
		Entry("shell metacharacters", `package name "nginx;id" contains a character that is not allowed`, "nginx;id"),
		Entry("an option as the version", `property ensure "-oDebug=1" contains characters that are not allowed`, "nginx", "--", "-oDebug=1"),
	)
})
