package execposix_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/execposix"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/exectype"
)

// newProps returns validated exec properties for command.
func newProps(command string, mutate ...func(*exectype.Properties)) *exectype.Properties {
	p := &exectype.Properties{CommonProperties: resources.CommonProperties{Name: command}}
	for _, m := range mutate {
		m(p)
	}
	Expect(p.Validate()).To(Succeed())
	return p
}

// provider returns a new exec provider from f.
func provider(f resources.Factory) exectype.Provider {
	p, err := f.New()
	Expect(err).NotTo(HaveOccurred())
	ep, ok := p.(exectype.Provider)
	Expect(ok).To(BeTrue())
	return ep
}

var _ = Describe("Factories", func() {
	It("make the posix provider: always manageable at priority 1", func() {
		f := execposix.NewPosixFactory(runner.Exec{}, nil)
		Expect(f.Type()).To(Equal("exec"))
		Expect(f.Name()).To(Equal("posix"))
		ok, prio, err := f.IsManageable(map[string]any{}, newProps("/bin/true"))
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(prio).To(Equal(1))
		Expect(provider(f).Name()).To(Equal("posix"))
	})

	It("make the shell provider: explicit only, priority 99, manageable when /bin/sh exists", func() {
		f := execposix.NewShellFactory(runner.Exec{}, nil)
		Expect(f.Type()).To(Equal("exec"))
		Expect(f.Name()).To(Equal("shell"))
		Expect(f.ExplicitOnly()).To(BeTrue())
		ok, prio, err := f.IsManageable(map[string]any{}, newProps("/bin/true"))
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(prio).To(Equal(99))
		Expect(provider(f).Name()).To(Equal("shell"))
	})

	It("find the shell provider unmanageable without its shell", func() {
		f := execposix.NewShellFactory(runner.Exec{}, nil)
		f.SetShell(filepath.Join(GinkgoT().TempDir(), "sh"))
		ok, _, err := f.IsManageable(map[string]any{}, newProps("/bin/true"))
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())

		f.SetShell(GinkgoT().TempDir())
		ok, _, err = f.IsManageable(map[string]any{}, newProps("/bin/true"))
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
	})

	It("refuse to make providers without a runner", func() {
		_, err := execposix.NewPosixFactory(nil, nil).New()
		Expect(err).To(MatchError(execposix.ErrNoRunner))
		_, err = execposix.NewShellFactory(nil, nil).New()
		Expect(err).To(MatchError(execposix.ErrNoRunner))
	})

	It("are selected by the registry: posix automatically, shell only when named", func() {
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(exectype.Type{})).To(Succeed())
		Expect(reg.RegisterProvider(execposix.NewShellFactory(runner.Exec{}, nil))).To(Succeed())
		Expect(reg.RegisterProvider(execposix.NewPosixFactory(runner.Exec{}, nil))).To(Succeed())

		f, err := reg.Select("exec", "", map[string]any{}, newProps("/bin/true"))
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Name()).To(Equal("posix"))

		f, err = reg.Select("exec", "shell", map[string]any{}, newProps("/bin/true"))
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Name()).To(Equal("shell"))
	})
})

var _ = Describe("Status", func() {
	var dir string

	BeforeEach(func() { dir = GinkgoT().TempDir() })

	DescribeTable("reports present and whether creates exists",
		func(factory func() resources.Factory, creates func(dir string) string, want bool) {
			p := newProps("/bin/true", func(p *exectype.Properties) { p.Creates = creates(dir) })
			st, err := provider(factory()).Status(context.Background(), p)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Protocol).To(Equal("io.choria.ccm.v1.resource.exec.state"))
			Expect(st.Type).To(Equal("exec"))
			Expect(st.Name).To(Equal("/bin/true"))
			Expect(st.Ensure).To(Equal("present"))
			Expect(st.Metadata.Name).To(Equal("/bin/true"))
			Expect(st.Metadata.Provider).To(Equal(factory().Name()))
			Expect(st.CreatesSatisfied).To(Equal(want))
			Expect(st.ExitCode).To(BeNil())
		},
		Entry("posix, no creates", posixFactory, func(string) string { return "" }, false),
		Entry("posix, creates exists", posixFactory, existing, true),
		Entry("posix, creates missing", posixFactory, func(d string) string { return filepath.Join(d, "missing") }, false),
		Entry("posix, creates below a regular file", posixFactory, func(d string) string { return filepath.Join(existing(d), "x") }, false),
		Entry("shell, creates exists", shellFactory, existing, true),
		Entry("shell, creates missing", shellFactory, func(d string) string { return filepath.Join(d, "missing") }, false),
	)

	It("honours ctx", func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := provider(posixFactory()).Status(ctx, newProps("/bin/true"))
		Expect(err).To(MatchError(context.Canceled))
	})
})

func posixFactory() resources.Factory { return execposix.NewPosixFactory(runner.Exec{}, nil) }
func shellFactory() resources.Factory { return execposix.NewShellFactory(runner.Exec{}, nil) }

// existing makes a file in dir and returns its path.
func existing(dir string) string {
	p := filepath.Join(dir, "flag")
	Expect(os.WriteFile(p, nil, 0o644)).To(Succeed())
	return p
}
