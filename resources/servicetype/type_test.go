package servicetype_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/servicetype"
)

const (
	running  = true
	stopped  = false
	enabled  = true
	disabled = false
)

func props(ensure string, enable *bool) *servicetype.Properties {
	p := &servicetype.Properties{
		CommonProperties: resources.CommonProperties{Name: "httpd", Ensure: ensure},
		Enable:           enable,
	}
	Expect(p.Validate()).To(Succeed())
	return p
}

func apply(ac resources.ApplyContext, p *servicetype.Properties, f resources.Provider) (*resources.Outcome, error) {
	return servicetype.Type{}.Apply(context.Background(), &ac, p, f)
}

func serviceState(o *resources.Outcome) *protocol.ServiceState {
	st, ok := o.State.(*protocol.ServiceState)
	Expect(ok).To(BeTrue(), "state is %T", o.State)
	return st
}

var _ = Describe("Type.Apply", func() {
	DescribeTable("Idempotency",
		func(ensure string, enable *bool, isRunning, isEnabled bool, wantCalls []string, wantChanged bool) {
			f := newFake(isRunning, isEnabled)
			out, err := apply(resources.ApplyContext{}, props(ensure, enable), f)
			Expect(err).ToNot(HaveOccurred())
			Expect(f.Calls()).To(Equal(wantCalls))
			Expect(out.Changed).To(Equal(wantChanged))
			Expect(out.Refreshed).To(BeFalse())
			Expect(out.NoopMessage).To(BeEmpty())

			st := serviceState(out)
			Expect(st.Ensure).To(Equal(ensure))
			Expect(st.Metadata.Running).To(Equal(ensure == "running"))
			if enable != nil {
				Expect(st.Metadata.Enabled).To(Equal(*enable))
			}
		},
		Entry("ensure: running, running: none", "running", nil, running, disabled, []string{"Status"}, false),
		Entry("ensure: running, stopped: start", "running", nil, stopped, disabled, []string{"Status", "Start", "Status"}, true),
		Entry("ensure: stopped, stopped: none", "stopped", nil, stopped, disabled, []string{"Status"}, false),
		Entry("ensure: stopped, running: stop", "stopped", nil, running, disabled, []string{"Status", "Stop", "Status"}, true),
		Entry("enable: true, enabled: none", "running", new(true), running, enabled, []string{"Status"}, false),
		Entry("enable: true, disabled: enable", "running", new(true), running, disabled, []string{"Status", "Enable", "Status"}, true),
		Entry("enable: false, enabled: disable", "running", new(false), running, enabled, []string{"Status", "Disable", "Status"}, true),
		Entry("enable: false, disabled: none", "running", new(false), running, disabled, []string{"Status"}, false),
		Entry("enable: nil, enabled: none", "running", nil, running, enabled, []string{"Status"}, false),
		Entry("enable: nil, disabled: none", "running", nil, running, disabled, []string{"Status"}, false),
		Entry("both phases: running state first, then enabled state", "running", new(true), stopped, disabled, []string{"Status", "Start", "Enable", "Status"}, true),
		Entry("stop and disable", "stopped", new(false), running, enabled, []string{"Status", "Stop", "Disable", "Status"}, true),
		Entry("running but disabled is a valid combination", "running", new(false), stopped, enabled, []string{"Status", "Start", "Disable", "Status"}, true),
		Entry("stopped but enabled is a valid combination", "stopped", new(true), running, disabled, []string{"Status", "Stop", "Enable", "Status"}, true),
	)

	DescribeTable("Subscribe Behavior: special cases",
		func(ensure string, isRunning bool, wantCalls []string, wantChanged, wantRefreshed bool) {
			f := newFake(isRunning, enabled)
			out, err := apply(resources.ApplyContext{Refresh: true}, props(ensure, nil), f)
			Expect(err).ToNot(HaveOccurred())
			Expect(f.Calls()).To(Equal(wantCalls))
			Expect(out.Changed).To(Equal(wantChanged))
			Expect(out.Refreshed).To(Equal(wantRefreshed))
			Expect(serviceState(out).Ensure).To(Equal(ensure))
		},
		Entry("ensure: stopped, service stopped: subscribe ignored", "stopped", stopped, []string{"Status"}, false, false),
		Entry("ensure: stopped, service running: subscribe ignored, stopped as usual", "stopped", running, []string{"Status", "Stop", "Status"}, true, false),
		Entry("service not running + ensure: running: start (not restart)", "running", stopped, []string{"Status", "Start", "Status"}, true, false),
		Entry("service running + ensure: running: restart", "running", running, []string{"Status", "Restart", "Status"}, true, true),
	)

	It("restarts on refresh and then fixes the enabled state", func() {
		f := newFake(running, disabled)
		out, err := apply(resources.ApplyContext{Refresh: true}, props("running", new(true)), f)
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Calls()).To(Equal([]string{"Status", "Restart", "Enable", "Status"}))
		Expect(out.Changed).To(BeTrue())
		Expect(out.Refreshed).To(BeTrue())
	})

	It("logs what it does to the apply context's logger", func() {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		_, err := apply(resources.ApplyContext{Log: log}, props("running", new(true)), newFake(stopped, disabled))
		Expect(err).ToNot(HaveOccurred())
		Expect(buf.String()).To(ContainSubstring(`msg="starting service" type=service name=httpd provider=fake`))
		Expect(buf.String()).To(ContainSubstring(`msg="enabling service"`))
	})

	Describe("noop mode", func() {
		DescribeTable("only queries status and says what it would have done",
			func(ensure string, enable *bool, refresh, isRunning, isEnabled bool, wantMessage string, wantRefreshed bool) {
				f := newFake(isRunning, isEnabled)
				out, err := apply(resources.ApplyContext{Noop: true, Refresh: refresh}, props(ensure, enable), f)
				Expect(err).ToNot(HaveOccurred())
				Expect(f.Calls()).To(Equal([]string{"Status"}))
				Expect(out.NoopMessage).To(Equal(wantMessage))
				Expect(out.Changed).To(Equal(wantMessage != ""))
				Expect(out.Refreshed).To(Equal(wantRefreshed))

				st := serviceState(out)
				Expect(st.Metadata.Running).To(Equal(isRunning), "the state is the one found")
				Expect(st.Metadata.Enabled).To(Equal(isEnabled), "the state is the one found")
			},
			Entry("would start", "running", nil, false, stopped, disabled, "Would have started", false),
			Entry("would stop", "stopped", nil, false, running, disabled, "Would have stopped", false),
			Entry("would restart for a refresh", "running", nil, true, running, disabled, "Would have restarted", true),
			Entry("would start, not restart, a stopped service on refresh", "running", nil, true, stopped, disabled, "Would have started", false),
			Entry("would ignore a refresh when ensure is stopped", "stopped", nil, true, stopped, disabled, "", false),
			Entry("would enable", "running", new(true), false, running, disabled, "Would have enabled", false),
			Entry("would disable", "running", new(false), false, running, enabled, "Would have disabled", false),
			Entry("would start and enable", "running", new(true), false, stopped, disabled, "Would have started. Would have enabled", false),
			Entry("would stop and disable", "stopped", new(false), false, running, enabled, "Would have stopped. Would have disabled", false),
			Entry("would restart and enable", "running", new(true), true, running, disabled, "Would have restarted. Would have enabled", true),
			Entry("nothing to do", "running", new(true), false, running, enabled, "", false),
		)
	})

	Describe("desired state validation", func() {
		DescribeTable("fails with ErrDesiredStateFailed when the service did not reach the desired state",
			func(ensure string, enable *bool, isRunning, isEnabled bool, stuck string, wantCalls []string) {
				f := newFake(isRunning, isEnabled)
				f.stuck[stuck] = true
				out, err := apply(resources.ApplyContext{}, props(ensure, enable), f)
				Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
				Expect(err.Error()).To(HavePrefix("service httpd: "))
				Expect(f.Calls()).To(Equal(wantCalls))
				Expect(out).ToNot(BeNil())
				Expect(out.Changed).To(BeTrue(), "the provider was asked to act")
				Expect(out.State).ToNot(BeNil())
			},
			Entry("start did not start it", "running", nil, stopped, disabled, "Start", []string{"Status", "Start", "Status"}),
			Entry("stop did not stop it", "stopped", nil, running, disabled, "Stop", []string{"Status", "Stop", "Status"}),
			Entry("enable did not enable it", "running", new(true), running, disabled, "Enable", []string{"Status", "Enable", "Status"}),
			Entry("disable did not disable it", "stopped", new(false), stopped, enabled, "Disable", []string{"Status", "Disable", "Status"}),
		)

		It("reports the running state and the enabled state wanted and found", func() {
			f := newFake(stopped, disabled)
			f.stuck["Enable"] = true
			_, err := apply(resources.ApplyContext{}, props("running", new(true)), f)
			Expect(err).To(MatchError(ContainSubstring("wanted running and enabled=true, found running and enabled=false")))
		})
	})

	Describe("failures", func() {
		boom := errors.New("boom")

		It("returns the status error and calls nothing else", func() {
			f := newFake(stopped, disabled)
			f.fail["Status"] = boom
			out, err := apply(resources.ApplyContext{}, props("running", nil), f)
			Expect(err).To(MatchError(boom))
			Expect(err.Error()).To(Equal("service httpd: status: boom"))
			Expect(out).To(BeNil())
			Expect(f.Calls()).To(Equal([]string{"Status"}))
		})

		It("rejects a provider that answers with no state", func() {
			f := newFake(stopped, disabled)
			f.nilState = true
			_, err := apply(resources.ApplyContext{}, props("running", nil), f)
			Expect(err).To(MatchError(servicetype.ErrNoState))
		})

		It("stops at the first failing action and keeps the state found", func() {
			f := newFake(stopped, disabled)
			f.fail["Start"] = boom
			out, err := apply(resources.ApplyContext{}, props("running", new(true)), f)
			Expect(err).To(MatchError(boom))
			Expect(err.Error()).To(Equal("service httpd: start: boom"))
			Expect(f.Calls()).To(Equal([]string{"Status", "Start"}))
			Expect(out.Changed).To(BeFalse())
			Expect(serviceState(out).Ensure).To(Equal("stopped"))
		})

		It("reports a change when a later action fails", func() {
			f := newFake(stopped, disabled)
			f.fail["Enable"] = boom
			out, err := apply(resources.ApplyContext{}, props("running", new(true)), f)
			Expect(err).To(MatchError(boom))
			Expect(err.Error()).To(Equal("service httpd: enable: boom"))
			Expect(f.Calls()).To(Equal([]string{"Status", "Start", "Enable"}))
			Expect(out.Changed).To(BeTrue())
		})

		It("returns the error of the status check after acting", func() {
			f := newFake(running, disabled)
			out, err := servicetype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, props("stopped", nil), &failSecondStatus{fakeService: f, err: boom})
			Expect(err).To(MatchError(boom))
			Expect(err.Error()).To(Equal("service httpd: after stop: status: boom"))
			Expect(out.Changed).To(BeTrue())
		})

		It("refuses a provider that is not a service provider", func() {
			_, err := apply(resources.ApplyContext{}, props("running", nil), notAService{})
			Expect(err).To(MatchError(servicetype.ErrNotServiceProvider))
		})

		It("refuses properties of another type", func() {
			_, err := servicetype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, &otherProps{}, newFake(running, enabled))
			Expect(err).To(MatchError(servicetype.ErrWrongProperties))
		})
	})
})

// failSecondStatus fails every Status after the first.
type failSecondStatus struct {
	*fakeService
	n   int
	err error
}

func (f *failSecondStatus) Status(ctx context.Context, service string) (*protocol.ServiceState, error) {
	f.n++
	if f.n > 1 {
		return nil, f.err
	}
	return f.fakeService.Status(ctx, service)
}

type otherProps struct{ resources.CommonProperties }

func (*otherProps) Validate() error { return nil }

// A service on its way up (systemd: activating, a crash-looping unit
// waiting to be restarted) is not running, but is not stopped either: the
// real-host specs found ensure stopped calling it stable while systemd went
// on starting it.
var _ = Describe("Type.Apply: a service on its way up", func() {
	pending := func() *pendingService { return &pendingService{fakeService: newFake(stopped, disabled), pending: true} }

	It("ensure stopped stops it, says stopping in the diff, and checks it is no longer on its way up", func() {
		f := pending()
		out, err := apply(resources.ApplyContext{}, props("stopped", nil), f)
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Calls()).To(Equal([]string{"Status", "StartPending", "Stop", "Status", "StartPending"}))
		Expect(out.Changed).To(BeTrue())
		Expect(out.Diff.Changes).To(Equal([]protocol.Change{{Field: "state", From: "starting", To: "stopped"}}))
		Expect(serviceState(out).Ensure).To(Equal("stopped"))
	})

	It("under noop says \"Would have stopped\" and only asks", func() {
		f := pending()
		out, err := apply(resources.ApplyContext{Noop: true}, props("stopped", nil), f)
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Calls()).To(Equal([]string{"Status", "StartPending"}))
		Expect(out.NoopMessage).To(Equal("Would have stopped"))
		Expect(out.Changed).To(BeTrue())
	})

	It("fails with ErrDesiredStateFailed when the stop leaves it on its way up", func() {
		f := pending()
		f.stopKeepsPending = true
		_, err := apply(resources.ApplyContext{}, props("stopped", nil), f)
		Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
		Expect(err).To(MatchError(ContainSubstring("service httpd: desired state not achieved: wanted stopped, found it starting")))
	})

	It("is stable for ensure stopped when the provider says it is not on its way up, and not asked for ensure running", func() {
		f := &pendingService{fakeService: newFake(stopped, disabled)}
		out, err := apply(resources.ApplyContext{}, props("stopped", nil), f)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(f.Calls()).To(Equal([]string{"Status", "StartPending"}))

		f = pending()
		_, err = apply(resources.ApplyContext{}, props("running", nil), f)
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Calls()).To(Equal([]string{"Status", "Start", "Status"}))
	})

	It("fails, changing nothing, when the provider cannot tell", func() {
		f := pending()
		f.fail["StartPending"] = errors.New("no bus")
		_, err := apply(resources.ApplyContext{}, props("stopped", nil), f)
		Expect(err).To(MatchError("service httpd: status: no bus"))
		Expect(f.Calls()).To(Equal([]string{"Status", "StartPending"}))
	})
})

var _ = Describe("a masked service", func() {
	masked := func() *fakeService {
		f := newFake(stopped, disabled)
		f.masked = true
		f.fail["Start"] = errors.New("Unit httpd.service is masked.")
		f.fail["Restart"] = errors.New("Unit httpd.service is masked.")
		f.fail["Enable"] = errors.New("Unit file httpd.service is masked.")
		return f
	}

	DescribeTable("fails before calling anything when it would need a start, a restart or an enable, under noop and in a run alike",
		func(ensure string, enable *bool, refresh, noop bool) {
			f := masked()
			out, err := apply(resources.ApplyContext{Noop: noop, Refresh: refresh}, props(ensure, enable), f)
			Expect(err).To(MatchError(servicetype.ErrMasked))
			Expect(err).To(MatchError("service httpd: the unit is masked: systemctl unmask it first"))
			Expect(f.Calls()).To(Equal([]string{"Status"}))
			Expect(out.Changed).To(BeFalse())
			Expect(out.NoopMessage).To(BeEmpty())
			Expect(serviceState(out).Metadata.Masked).To(BeTrue())
		},
		Entry("ensure running", "running", nil, false, false),
		Entry("ensure running under noop", "running", nil, false, true),
		Entry("ensure running with enable: false", "running", new(false), false, false),
		Entry("ensure running with enable: false under noop", "running", new(false), false, true),
		Entry("ensure running on refresh", "running", nil, true, false),
		Entry("ensure running on refresh under noop", "running", nil, true, true),
		Entry("ensure stopped with enable: true", "stopped", new(true), false, false),
		Entry("ensure stopped with enable: true under noop", "stopped", new(true), false, true),
	)

	DescribeTable("is stable when it should be stopped and not enabled",
		func(enable *bool, refresh, noop bool) {
			f := masked()
			out, err := apply(resources.ApplyContext{Noop: noop, Refresh: refresh}, props("stopped", enable), f)
			Expect(err).ToNot(HaveOccurred())
			Expect(f.Calls()).To(Equal([]string{"Status"}))
			Expect(out.Changed).To(BeFalse())
			Expect(out.NoopMessage).To(BeEmpty())
		},
		Entry("ensure stopped", nil, false, false),
		Entry("ensure stopped under noop", nil, false, true),
		Entry("ensure stopped with enable: false", new(false), false, false),
		Entry("ensure stopped with enable: false under noop", new(false), false, true),
		Entry("ensure stopped on refresh", nil, true, false),
	)

	It("keeps its error text", func() {
		Expect(servicetype.ErrMasked.Error()).To(Equal("the unit is masked"))
	})
})
