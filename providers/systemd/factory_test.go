package systemd_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/providers/systemd"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/servicetype"
)

var _ = Describe("Factory", func() {
	It("makes systemd providers of the service type", func() {
		f := systemd.NewFactory(&runner.Fake{}, nil)
		Expect(f.Type()).To(Equal("service"))
		Expect(f.Name()).To(Equal("systemd"))

		p, err := f.New()
		Expect(err).ToNot(HaveOccurred())
		Expect(p.Name()).To(Equal("systemd"))
		Expect(p).To(BeAssignableToTypeOf(&systemd.Provider{}))
		_, ok := p.(servicetype.Provider)
		Expect(ok).To(BeTrue())
	})

	Describe("IsManageable", func() {
		DescribeTable("Provider Selection: available when systemctl is in PATH, with priority 1",
			func(lookPath func(string) (string, error), wantOK bool, wantPriority int) {
				var asked []string
				f := systemd.NewFactory(&runner.Fake{}, nil, systemd.WithLookPath(func(file string) (string, error) {
					asked = append(asked, file)
					return lookPath(file)
				}))
				ok, priority, err := f.IsManageable(map[string]any{"os": "debian"}, &servicetype.Properties{})
				Expect(err).ToNot(HaveOccurred())
				Expect(ok).To(Equal(wantOK))
				Expect(priority).To(Equal(wantPriority))
				Expect(asked).To(Equal([]string{"systemctl"}))
			},
			Entry("systemctl found", func(string) (string, error) { return "/usr/bin/systemctl", nil }, true, 1),
			Entry("systemctl not found", func(file string) (string, error) {
				return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
			}, false, 0),
			Entry("lookup fails otherwise", func(string) (string, error) { return "", errors.New("permission denied") }, false, 0),
		)

		It("looks in the real PATH by default", func() {
			dir := GinkgoT().TempDir()
			GinkgoT().Setenv("PATH", dir)
			f := systemd.NewFactory(&runner.Fake{}, nil)

			ok, _, err := f.IsManageable(nil, nil)
			Expect(err).ToNot(HaveOccurred())
			Expect(ok).To(BeFalse(), "an empty PATH directory has no systemctl")

			Expect(os.WriteFile(filepath.Join(dir, "systemctl"), []byte("#!/bin/sh\nexit 0\n"), 0o755)).To(Succeed())
			ok, priority, err := f.IsManageable(nil, nil)
			Expect(err).ToNot(HaveOccurred())
			Expect(ok).To(BeTrue())
			Expect(priority).To(Equal(1))
		})

		It("is selected by a registry when systemctl is in PATH", func() {
			reg := resources.NewRegistry()
			Expect(reg.RegisterType(servicetype.Type{})).To(Succeed())
			f := systemd.NewFactory(&runner.Fake{}, nil, systemd.WithLookPath(func(string) (string, error) { return "/bin/systemctl", nil }))
			Expect(reg.RegisterProvider(f)).To(Succeed())

			got, err := reg.Select("service", "", nil, &servicetype.Properties{})
			Expect(err).ToNot(HaveOccurred())
			Expect(got.Name()).To(Equal("systemd"))
		})
	})

	Describe("Concurrency", func() {
		It("serialises the systemctl calls of all the providers it made", func() {
			r := &overlapRunner{}
			f := systemd.NewFactory(r, nil)
			assertSerialised(r, f, f)
		})

		It("shares a lock given with WithLock between factories", func() {
			r := &overlapRunner{}
			lock := &sync.Mutex{}
			assertSerialised(r, systemd.NewFactory(r, nil, systemd.WithLock(lock)), systemd.NewFactory(r, nil, systemd.WithLock(lock)))
		})
	})
})

// assertSerialised runs Status and Restart from four providers at once, two
// from each factory, and checks no two systemctl calls overlapped.
func assertSerialised(r *overlapRunner, a, b *systemd.Factory) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for _, f := range []*systemd.Factory{a, a, b, b} {
		p, err := f.New()
		Expect(err).ToNot(HaveOccurred())
		sp := p.(*systemd.Provider)
		wg.Go(func() {
			ctx := GinkgoT().Context()
			_, err := sp.Status(ctx, "nginx")
			errs <- err
			errs <- sp.Restart(ctx, "nginx")
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		Expect(err).ToNot(HaveOccurred())
	}
	maxInflight, calls := r.stats()
	Expect(calls).To(Equal(4*4), "each provider: daemon-reload, is-active, is-enabled, restart")
	Expect(maxInflight).To(Equal(1))
}
