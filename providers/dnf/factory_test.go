package dnf_test

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt"
	"github.com/ccm-fleet/ccm/providers/dnf"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

func withProvider(name string) *pkgtype.Properties {
	p := &pkgtype.Properties{}
	p.Name, p.Ensure, p.Provider = "zsh", "present", name
	return p
}

// gateRunner blocks every command until released, so a spec can see
// whether a second command starts while the first still runs.
type gateRunner struct {
	started chan string
	release chan struct{}
}

func (g *gateRunner) Run(ctx context.Context, c runner.Command) (*runner.Result, error) {
	g.started <- c.String()
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Exit 1: to the status queries the spec runs, the package is absent.
	return &runner.Result{ExitCode: 1}, nil
}

var _ = Describe("Factory", func() {
	var f *dnf.Factory

	BeforeEach(func() {
		f = dnf.NewFactory(&runner.Fake{}, nil, &sync.Mutex{})
	})

	It("makes dnf providers of the package type", func() {
		Expect(f.Type()).To(Equal("package"))
		Expect(f.Name()).To(Equal("dnf"))
		p, err := f.New()
		Expect(err).NotTo(HaveOccurred())
		Expect(p).To(BeAssignableToTypeOf(&dnf.Provider{}))
		Expect(p.(pkgtype.Provider).Name()).To(Equal("dnf"))
	})

	DescribeTable("is manageable on RHEL and Fedora hosts, or when forced",
		func(facts map[string]any, props resources.Properties, wantOK bool) {
			ok, prio, err := f.IsManageable(facts, props)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(Equal(wantOK))
			if wantOK {
				Expect(prio).To(Equal(1))
			}
		},
		Entry("os rhel", map[string]any{"os": "rhel"}, withProvider(""), true),
		Entry("os fedora", map[string]any{"os": "fedora"}, withProvider(""), true),
		Entry("os RHEL", map[string]any{"os": "RHEL"}, withProvider(""), true),
		Entry("os debian", map[string]any{"os": "debian"}, withProvider(""), false),
		Entry("no os fact", map[string]any{}, withProvider(""), false),
		Entry("nil facts", nil, withProvider(""), false),
		Entry("os fact not a string", map[string]any{"os": true}, withProvider(""), false),
		Entry("forced with provider: dnf on debian", map[string]any{"os": "debian"}, withProvider("dnf"), true),
	)

	It("is selected by the registry on RHEL and can be forced elsewhere", func() {
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(pkgtype.Type{})).To(Succeed())
		Expect(reg.RegisterProvider(f)).To(Succeed())

		sel, err := reg.Select("package", "", map[string]any{"os": "rhel"}, withProvider(""))
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Name()).To(Equal("dnf"))

		_, err = reg.Select("package", "", map[string]any{"os": "debian"}, withProvider(""))
		Expect(err).To(MatchError(resources.ErrNoSuitableProvider))

		sel, err = reg.Select("package", "dnf", map[string]any{"os": "debian"}, withProvider("dnf"))
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Name()).To(Equal("dnf"))
	})

	It("serialises commands with every package provider sharing the lock, apt included", func(ctx context.Context) {
		gate := &gateRunner{started: make(chan string, 2), release: make(chan struct{})}
		lock := &sync.Mutex{}
		a, err := apt.NewFactory(gate, nil, lock).New()
		Expect(err).NotTo(HaveOccurred())
		b, err := dnf.NewFactory(gate, nil, lock).New()
		Expect(err).NotTo(HaveOccurred())

		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			Expect(a.(pkgtype.Provider).Status(ctx, "first")).Error().NotTo(HaveOccurred())
		}()
		Eventually(gate.started).Should(Receive(ContainSubstring("first")))
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			Expect(b.(pkgtype.Provider).Status(ctx, "second")).Error().NotTo(HaveOccurred())
		}()
		Consistently(gate.started).ShouldNot(Receive())
		gate.release <- struct{}{}
		Eventually(gate.started).Should(Receive(ContainSubstring("second")))
		gate.release <- struct{}{}
		wg.Wait()
	})
})
