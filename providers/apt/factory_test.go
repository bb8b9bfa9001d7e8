package apt_test

import (
	"context"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt"
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
	active  atomic.Int32
	maxSeen atomic.Int32
}

func (g *gateRunner) Run(ctx context.Context, c runner.Command) (*runner.Result, error) {
	n := g.active.Add(1)
	defer g.active.Add(-1)
	for {
		m := g.maxSeen.Load()
		if n <= m || g.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	g.started <- c.Args[len(c.Args)-1]
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &runner.Result{ExitCode: 1}, nil
}

var _ = Describe("Factory", func() {
	var f *apt.Factory

	BeforeEach(func() {
		f = apt.NewFactory(&runner.Fake{}, nil, &sync.Mutex{})
	})

	It("makes apt providers of the package type", func() {
		Expect(f.Type()).To(Equal("package"))
		Expect(f.Name()).To(Equal("apt"))
		p, err := f.New()
		Expect(err).NotTo(HaveOccurred())
		Expect(p).To(BeAssignableToTypeOf(&apt.Provider{}))
		Expect(p.(pkgtype.Provider).Name()).To(Equal("apt"))
	})

	DescribeTable("is manageable on Debian family hosts, or when forced",
		func(facts map[string]any, props resources.Properties, wantOK bool) {
			ok, prio, err := f.IsManageable(facts, props)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(Equal(wantOK))
			if wantOK {
				Expect(prio).To(Equal(1))
			}
		},
		Entry("os debian", map[string]any{"os": "debian"}, withProvider(""), true),
		Entry("os Debian", map[string]any{"os": "Debian"}, withProvider(""), true),
		Entry("os rhel", map[string]any{"os": "rhel"}, withProvider(""), false),
		Entry("os fedora", map[string]any{"os": "fedora"}, withProvider(""), false),
		Entry("no os fact", map[string]any{}, withProvider(""), false),
		Entry("nil facts", nil, withProvider(""), false),
		Entry("os fact not a string", map[string]any{"os": 1}, withProvider(""), false),
		Entry("forced with provider: apt on rhel", map[string]any{"os": "rhel"}, withProvider("apt"), true),
		Entry("nil properties on debian", map[string]any{"os": "debian"}, nil, true),
	)

	It("is selected by the registry on Debian and can be forced elsewhere", func() {
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(pkgtype.Type{})).To(Succeed())
		Expect(reg.RegisterProvider(f)).To(Succeed())

		sel, err := reg.Select("package", "", map[string]any{"os": "debian"}, withProvider(""))
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Name()).To(Equal("apt"))

		_, err = reg.Select("package", "", map[string]any{"os": "rhel"}, withProvider(""))
		Expect(err).To(MatchError(resources.ErrNoSuitableProvider))

		sel, err = reg.Select("package", "apt", map[string]any{"os": "rhel"}, withProvider("apt"))
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Name()).To(Equal("apt"))
	})

	It("serialises commands of every provider sharing the lock", func(ctx context.Context) {
		gate := &gateRunner{started: make(chan string, 2), release: make(chan struct{})}
		lock := &sync.Mutex{}
		a, err := apt.NewFactory(gate, nil, lock).New()
		Expect(err).NotTo(HaveOccurred())
		b, err := apt.NewFactory(gate, nil, lock).New()
		Expect(err).NotTo(HaveOccurred())

		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			_, err := a.(pkgtype.Provider).Status(ctx, "first")
			Expect(err).NotTo(HaveOccurred())
		}()
		Eventually(gate.started).Should(Receive(Equal("first")))
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			_, err := b.(pkgtype.Provider).Status(ctx, "second")
			Expect(err).NotTo(HaveOccurred())
		}()
		Consistently(gate.started).ShouldNot(Receive())
		gate.release <- struct{}{}
		Eventually(gate.started).Should(Receive(Equal("second")))
		gate.release <- struct{}{}
		wg.Wait()
		Expect(gate.maxSeen.Load()).To(Equal(int32(1)))
	})
})
