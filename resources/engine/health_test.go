package engine_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("Health checks", func() {
	var (
		typ *probeType
		eng *engine.Engine
		env = templates.New(map[string]any{"hostname": "web1"}, nil)
		ctx = context.Background()
	)
	BeforeEach(func() {
		typ = &probeType{}
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(typ)).To(Succeed())
		n := 0
		Expect(reg.RegisterProvider(probeFactory{name: "probe", manage: true, instances: &n})).To(Succeed())
		eng = engine.New(reg, engine.WithHealthRunner(providers.HealthRunner(runner.Exec{})))
	})
	check := func(script string, more map[string]any) map[string]any {
		hc := map[string]any{"command": "/bin/sh -c '" + script + "'"}
		for k, v := range more {
			hc[k] = v
		}
		return hc
	}
	ensure := func(opts engine.RunOptions, fail bool, checks ...any) *protocol.TransactionEvent {
		opts.Env = env
		ev, err := eng.Ensure(ctx, opts, engine.Spec{Type: "file", Properties: map[string]any{"name": "/tmp/x", "fail": fail, "health_checks": checks}})
		Expect(err).ToNot(HaveOccurred())
		return ev
	}

	// CCM's monitoring page (docs/content/monitoring/_index.md) maps exit
	// codes nagios style; CCM fails the resource for every status but OK.
	DescribeTable("maps exit codes nagios style, the first output line the message; every status but OK fails the resource, as in CCM",
		func(script, status string, code int, message string, failed bool) {
			ev := ensure(engine.RunOptions{}, false, check(script, map[string]any{"name": "probe"}))
			Expect(ev.HealthChecks).To(HaveLen(1))
			h := ev.HealthChecks[0]
			Expect(h.Name).To(Equal("probe"))
			Expect(h.Status).To(Equal(status))
			Expect(h.Code).To(Equal(code))
			Expect(h.Message).To(Equal(message))
			Expect(ev.Failed).To(Equal(failed))
			Expect(ev.Changed).To(BeTrue(), "the resource itself applied")
		},
		Entry("OK", "echo all good; echo second line", protocol.HealthOK, 0, "all good", false),
		Entry("WARNING", "echo slow; exit 1", protocol.HealthWarning, 1, "slow", true),
		Entry("CRITICAL", "echo down >&2; exit 2", protocol.HealthCritical, 2, "down", true),
		Entry("UNKNOWN", "exit 3", protocol.HealthUnknown, 3, "", true),
	)

	It("runs no check on an engine built without a health-check runner: each is UNKNOWN, saying why", func() {
		marker := filepath.Join(GinkgoT().TempDir(), "ran")
		eng = engine.New(eng.Registry())
		ev := ensure(engine.RunOptions{}, false, check("touch "+marker+"; exit 2", map[string]any{"name": "probe"}))
		Expect(ev.HealthChecks).To(HaveLen(1))
		Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthUnknown))
		Expect(ev.HealthChecks[0].Message).To(Equal(engine.ErrNoHealthRunner.Error()))
		Expect(ev.Failed).To(BeFalse())
		Expect(marker).ToNot(BeAnExistingFile())
	})

	It("names a CRITICAL check in the event's errors, and runs after a failed apply too", func() {
		ev := ensure(engine.RunOptions{}, true, check("echo refused; exit 2", nil))
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.HealthChecks).To(HaveLen(1))
		Expect(ev.Errors).To(ContainElement(ContainSubstring("health check /bin/sh -c 'echo refused; exit 2': CRITICAL: refused")))
	})

	It("tries again until OK, with try_sleep between tries", func() {
		marker := filepath.Join(GinkgoT().TempDir(), "tries")
		// Fails until the third try.
		script := "echo x >> " + marker + "; test $(wc -l < " + marker + ") -ge 3 || exit 2; echo ready"
		ev := ensure(engine.RunOptions{}, false, check(script, map[string]any{"tries": 5, "try_sleep": "10ms"}))
		Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthOK))
		Expect(ev.HealthChecks[0].Tries).To(Equal(3))
		Expect(ev.Failed).To(BeFalse())
		b, err := os.ReadFile(marker)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(b)).To(Equal("x\nx\nx\n"))
	})

	It("names a WARNING check in the event's errors: it fails the resource as in CCM", func() {
		ev := ensure(engine.RunOptions{}, false, check("echo degraded; exit 1", map[string]any{"name": "probe"}))
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.Errors).To(ConsistOf("health check probe: WARNING: degraded"))
	})

	It("reports a command that cannot run or times out as UNKNOWN, failing the resource as in CCM", func() {
		ev := ensure(engine.RunOptions{}, false, map[string]any{"command": "/nonexistent/check"}, check("sleep 5", map[string]any{"timeout": "50ms"}))
		Expect(ev.HealthChecks).To(HaveLen(2))
		Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthUnknown))
		Expect(ev.HealthChecks[0].Code).To(Equal(-1))
		Expect(ev.HealthChecks[1].Status).To(Equal(protocol.HealthUnknown))
		Expect(ev.HealthChecks[1].Message).To(ContainSubstring("timed out"))
		Expect(ev.Failed).To(BeTrue())
	})

	It("takes a command written as a YAML block (CCM's examples), its trailing newline ignored", func() {
		ev := ensure(engine.RunOptions{}, false, map[string]any{"tries": 5, "try_sleep": "1s", "command": "/bin/sh -c 'echo served Acme Inc'\n"})
		Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthOK))
		Expect(ev.HealthChecks[0].Message).To(Equal("served Acme Inc"))
	})

	It("under MonitorOnly runs only the checks, applying nothing", func() {
		ev := ensure(engine.RunOptions{MonitorOnly: true}, false, check("exit 2", nil))
		Expect(typ.applied).To(BeEmpty())
		Expect(ev.Changed).To(BeFalse())
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthCritical))
	})

	DescribeTable("refuses a check that could not run as written, naming it",
		func(hc map[string]any, problem string) {
			_, err := eng.Ensure(ctx, engine.RunOptions{Env: env}, engine.Spec{Type: "file", Properties: map[string]any{"name": "/tmp/x", "health_checks": []any{hc}}})
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(problem))
			Expect(typ.applied).To(BeEmpty())
		},
		Entry("no command", map[string]any{"name": "x"}, "health_checks[0]: command is empty"),
		Entry("unbalanced quotes", map[string]any{"command": "/bin/echo 'x"}, "health_checks[0]: command"),
		Entry("too many tries", map[string]any{"command": "/bin/true", "tries": 1000}, "tries 1000"),
		Entry("a bad timeout", map[string]any{"command": "/bin/true", "timeout": "soon"}, `timeout "soon"`),
		Entry("an unknown key", map[string]any{"command": "/bin/true", "retries": 3}, "retries"),
	)
})
