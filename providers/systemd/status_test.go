package systemd_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/providers/systemd"
)

var _ = Describe("Provider.Status", func() {
	var fake *runner.Fake

	BeforeEach(func() {
		fake = &runner.Fake{}
		fake.Expect(daemonReload, 0, "")
	})

	AfterEach(func() {
		Expect(fake.Verify()).To(Succeed())
	})

	// The exit codes are the ones systemctl really gives: is-active exits 0
	// only for active and reloading, 3 otherwise (1 when it cannot reach
	// systemd at all); the mapping reads stdout, never the exit code.
	DescribeTable("Active State Detection",
		func(fixture string, exitCode int, wantRunning bool, wantErr string) {
			expectFixture(fake, unit("is-active", "nginx"), exitCode, "is-active/"+fixture)
			if wantErr == "" {
				expectFixture(fake, unit("is-enabled", "nginx"), 0, "is-enabled/enabled")
			}

			st, err := newProvider(fake).Status(GinkgoT().Context(), "nginx")
			if wantErr != "" {
				Expect(err).To(MatchError(systemd.ErrInvalidIsActive))
				Expect(err).To(MatchError(ContainSubstring(wantErr)))
				Expect(st).To(BeNil())
				return
			}
			Expect(err).ToNot(HaveOccurred())
			Expect(st.Metadata.Running).To(Equal(wantRunning))
			if wantRunning {
				Expect(st.Ensure).To(Equal("running"))
			} else {
				Expect(st.Ensure).To(Equal("stopped"))
			}
		},
		Entry("active: running (exit 0)", "active", 0, true, ""),
		Entry("inactive: stopped (exit 3)", "inactive", 3, false, ""),
		Entry("failed: stopped (exit 3)", "failed", 3, false, ""),
		Entry("activating: stopped (exit 3)", "activating", 3, false, ""),
		Entry("other: reloading is an error (exit 0)", "reloading", 0, false,
			`systemctl is-active --system -- nginx: invalid systemctl is-active output "reloading" (exit status 0)`),
		Entry("other: deactivating is an error (exit 3)", "deactivating", 3, false,
			`invalid systemctl is-active output "deactivating" (exit status 3)`),
		Entry("other: no output when systemd is not running is an error with the reason (exit 1)", "no-bus", 1, false,
			`invalid systemctl is-active output "" (exit status 1): System has not been booted with systemd as init system (PID 1). Can't operate.; Failed to connect to bus: Host is down`),
	)

	// is-enabled exits 0 for the enabled states, 1 for the disabled ones
	// (captured from systemd 252 on Debian 12 with --root) and 4 for
	// not-found (systemd 254 and later; 252 prints an error instead).
	DescribeTable("Enabled State Detection",
		func(fixture string, exitCode int, wantEnabled bool, wantErr error) {
			expectFixture(fake, unit("is-active", "nginx"), 0, "is-active/active")
			expectFixture(fake, unit("is-enabled", "nginx"), exitCode, "is-enabled/"+fixture)

			st, err := newProvider(fake).Status(GinkgoT().Context(), "nginx")
			if wantErr != nil {
				Expect(err).To(MatchError(wantErr))
				Expect(err.Error()).To(HavePrefix("systemctl is-enabled --system -- nginx: "))
				Expect(st).To(BeNil())
				return
			}
			Expect(err).ToNot(HaveOccurred())
			Expect(st.Metadata.Enabled).To(Equal(wantEnabled))
			// Masked only for masked units: the service type refuses to
			// start or enable those, under noop too.
			Expect(st.Metadata.Masked).To(Equal(fixture == "masked" || fixture == "masked-runtime"), "Masked for %s", fixture)
		},
		Entry("enabled: enabled (exit 0)", "enabled", 0, true, nil),
		Entry("enabled-runtime: enabled (exit 0)", "enabled-runtime", 0, true, nil),
		Entry("alias: enabled (exit 0)", "alias", 0, true, nil),
		Entry("static: enabled (exit 0)", "static", 0, true, nil),
		Entry("indirect: enabled (exit 0)", "indirect", 0, true, nil),
		Entry("generated: enabled (exit 0)", "generated", 0, true, nil),
		Entry("transient: enabled (exit 0)", "transient", 0, true, nil),
		Entry("linked: disabled (exit 1)", "linked", 1, false, nil),
		Entry("linked-runtime: disabled (exit 1)", "linked-runtime", 1, false, nil),
		Entry("masked: disabled and masked (exit 1)", "masked", 1, false, nil),
		Entry("masked-runtime: disabled and masked (exit 1)", "masked-runtime", 1, false, nil),
		Entry("disabled: disabled (exit 1)", "disabled", 1, false, nil),
		Entry("not-found: error service not found (exit 4)", "not-found", 4, false, systemd.ErrServiceNotFound),
		Entry("systemd 252 missing unit, stderr only: error service not found (exit 1)", "not-found-v252", 1, false, systemd.ErrServiceNotFound),
		Entry("other: bad is an error (documented, exit > 0)", "bad", 1, false, systemd.ErrInvalidIsEnabled),
	)

	It("returns the whole state document", func() {
		expectFixture(fake, unit("is-active", "nginx.service"), 3, "is-active/inactive")
		expectFixture(fake, unit("is-enabled", "nginx.service"), 0, "is-enabled/enabled")

		st, err := newProvider(fake).Status(GinkgoT().Context(), "nginx.service")
		Expect(err).ToNot(HaveOccurred())
		Expect(st.Type).To(Equal("service"))
		Expect(st.Protocol).To(Equal("io.choria.ccm.v1.resource.service.state"))
		Expect(st.Name).To(Equal("nginx.service"))
		Expect(st.Ensure).To(Equal("stopped"))
		Expect(*st.Metadata).To(Equal(protocolMetadata("nginx.service", true, false)))
	})

	It("keeps its error texts: service not found, invalid systemctl is-active output, invalid systemctl is-enabled output", func() {
		fake.Expect(unit("is-active", "nginx"), 0, "bogus\n")
		_, err := newProvider(fake).Status(GinkgoT().Context(), "nginx")
		Expect(err.Error()).To(ContainSubstring("invalid systemctl is-active output"))

		Expect(systemd.ErrServiceNotFound.Error()).To(Equal("service not found"))
		Expect(systemd.ErrInvalidIsActive.Error()).To(Equal("invalid systemctl is-active output"))
		Expect(systemd.ErrInvalidIsEnabled.Error()).To(Equal("invalid systemctl is-enabled output"))
	})
})
