package execposix_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/exectype"
)

var _ = Describe("The environment of an exec command", func() {
	// runEnv runs /usr/bin/env (found through the base PATH, not the
	// agent's) with the provider and returns the environment it printed,
	// the runner's marker left out.
	runEnv := func(prov exectype.Provider, mutate ...func(*exectype.Properties)) []string {
		GinkgoHelper()
		out, err := exectype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, newProps("env", append(mutate, func(p *exectype.Properties) { p.LogOutput = true })...), prov)
		Expect(err).NotTo(HaveOccurred())
		st := out.State.(*protocol.ExecState)
		Expect(st.ExitCode).To(HaveValue(Equal(0)))
		var env []string
		for _, l := range strings.Split(strings.TrimSpace(st.Metadata.Output), "\n") {
			if !strings.HasPrefix(l, runner.MarkerEnv+"=") {
				env = append(env, l)
			}
		}
		slices.Sort(env)
		return env
	}

	BeforeEach(func() {
		// What the agent (or the caller of ccm-agent ensure) has must not leak.
		GinkgoT().Setenv("CCM_TEST_SECRET", "leaked")
		GinkgoT().Setenv("PATH", "/nonexistent")
		GinkgoT().Setenv("LANG", "de_DE.UTF-8")
	})

	It("is CCM's fixed base and nothing of the agent's own, with the posix and shell providers", func() {
		want := []string{"LANG=C", "LC_ALL=C", "PATH=" + exectype.BasePath}
		Expect(runEnv(provider(posixFactory()))).To(Equal(want))
		// /bin/sh may add PWD, SHLVL and _ of its own.
		got := runEnv(provider(shellFactory()))
		Expect(got).To(ContainElements(want))
		Expect(strings.Join(got, "\n")).NotTo(ContainSubstring("leaked"))
		Expect(strings.Join(got, "\n")).NotTo(ContainSubstring("de_DE"))
	})

	It("adds the resource's environment, which may override the locale", func() {
		Expect(runEnv(provider(posixFactory()), func(p *exectype.Properties) {
			p.Environment = []string{"APP=1", "LANG=en_US.UTF-8"}
		})).To(Equal([]string{"APP=1", "LANG=en_US.UTF-8", "LC_ALL=C", "PATH=" + exectype.BasePath}))
	})

	It("runs in / unless the resource sets cwd, whatever the caller's directory", func() {
		run := func(mutate ...func(*exectype.Properties)) string {
			GinkgoHelper()
			out, err := exectype.Type{}.Apply(context.Background(), &resources.ApplyContext{},
				newProps("pwd", append(mutate, func(p *exectype.Properties) { p.LogOutput = true })...), provider(posixFactory()))
			Expect(err).NotTo(HaveOccurred())
			return strings.TrimSpace(out.State.(*protocol.ExecState).Metadata.Output)
		}
		GinkgoT().Chdir(GinkgoT().TempDir())
		Expect(run()).To(Equal("/"))
		dir := GinkgoT().TempDir()
		Expect(run(func(p *exectype.Properties) { p.Cwd = dir })).To(Equal(dir))
	})

	It("uses the resource's path instead of the base PATH, for lookup and for the command", func() {
		bin := GinkgoT().TempDir()
		Expect(os.Symlink("/usr/bin/env", filepath.Join(bin, "env"))).To(Succeed())
		Expect(runEnv(provider(posixFactory()), func(p *exectype.Properties) { p.Path = bin })).To(ContainElement("PATH=" + bin))
	})
})
