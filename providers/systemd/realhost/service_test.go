package realhost_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = BeforeSuite(func(ctx SpecContext) { bootHost(ctx) }, NodeTimeout(setupTimeout))

// from is a unit's state before a spec runs.
type from struct{ active, enabled bool }

func (f from) String() string {
	s := "stopped"
	if f.active {
		s = "running"
	}
	if f.enabled {
		return s + " and enabled"
	}
	return s + " and disabled"
}

func (f from) state() unitState {
	st := unitState{Active: "inactive", Enabled: "disabled"}
	if f.active {
		st.Active = "active"
	}
	if f.enabled {
		st.Enabled = "enabled"
	}
	return st
}

// enableFlag is the command line flag for enable (none when unset).
func enableFlag(enable *bool) []string {
	switch {
	case enable == nil:
		return nil
	case *enable:
		return []string{"--enable"}
	default:
		return []string{"--disable"}
	}
}

func enableName(enable *bool) string {
	if enable == nil {
		return "enable unset"
	}
	return fmt.Sprintf("enable: %t", *enable)
}

// noopMessage is the seeds' noop message for going from f to ensure and
// enable: the running state first, then the enabled state, joined by ". ".
func noopMessage(f from, ensure string, enable *bool) string {
	var msgs []string
	switch {
	case ensure == "running" && !f.active:
		msgs = append(msgs, "Would have started")
	case ensure == "stopped" && f.active:
		msgs = append(msgs, "Would have stopped")
	}
	switch {
	case enable != nil && *enable && !f.enabled:
		msgs = append(msgs, "Would have enabled")
	case enable != nil && !*enable && f.enabled:
		msgs = append(msgs, "Would have disabled")
	}
	return strings.Join(msgs, ". ")
}

var (
	yes = func() *bool { b := true; return &b }()
	no  = func() *bool { b := false; return &b }()
)

// matrixUnit is the unit the ensure matrix drives.
const matrixUnit = "matrix"

// setState brings the matrix unit to f with systemctl, as an
// administrator would, and checks systemd agrees.
func setState(ctx context.Context, f from) {
	GinkgoHelper()
	verb, boot := "stop", "disable"
	if f.active {
		verb = "start"
	}
	if f.enabled {
		boot = "enable"
	}
	sh(ctx, fmt.Sprintf("systemctl %s %s; systemctl %s %s 2>/dev/null", verb, matrixUnit, boot, matrixUnit))
	Expect(state(ctx, matrixUnit)).To(Equal(f.state()))
}

var _ = Describe("ccm-agent ensure service on a real systemd", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		writeUnit(ctx, matrixUnit, sleeper("infinity"))
	})

	var entries []TableEntry
	for _, f := range []from{{true, true}, {true, false}, {false, true}, {false, false}} {
		for _, ensure := range []string{"running", "stopped"} {
			for _, enable := range []*bool{nil, yes, no} {
				entries = append(entries, Entry(fmt.Sprintf("%s, from %s", strings.Join(append([]string{ensure}, enableName(enable)), ", "), f), f, ensure, enable))
			}
		}
	}

	DescribeTable("every ensure and enable from every starting state: noop changes nothing and says the seeds' message, a run changes what differs, a second run is stable",
		func(ctx SpecContext, f from, ensure string, enable *bool) {
			setState(ctx, f)
			args := append([]string{"service", matrixUnit, ensure}, enableFlag(enable)...)
			msg := noopMessage(f, ensure, enable)
			want := unitState{Active: "inactive", Enabled: f.state().Enabled}
			if ensure == "running" {
				want.Active = "active"
			}
			if enable != nil {
				want.Enabled = map[bool]string{true: "enabled", false: "disabled"}[*enable]
			}
			stable := fmt.Sprintf("service#%s stable (%s)", matrixUnit, ensure)

			By("--noop: the seeds' message, exit 5 when something would change, and the host untouched")
			noop := agent(ctx, append([]string{"ensure", "--noop"}, args...)...)
			if msg == "" {
				Expect(noop.Line).To(Equal(stable), noop.Stderr)
				Expect(noop.Exit).To(Equal(0))
			} else {
				Expect(noop.Line).To(Equal(fmt.Sprintf("service#%s would change: %s", matrixUnit, msg)), noop.Stderr)
				Expect(noop.Exit).To(Equal(5))
			}
			Expect(state(ctx, matrixUnit)).To(Equal(f.state()))

			By("a run: changed when something differed, and systemd agrees")
			real := agent(ctx, append([]string{"ensure"}, args...)...)
			Expect(real.Exit).To(Equal(0), real.Stdout+real.Stderr)
			if msg == "" {
				Expect(real.Line).To(Equal(stable))
			} else {
				Expect(real.Line).To(Equal(fmt.Sprintf("service#%s changed (%s)", matrixUnit, ensure)))
			}
			Expect(state(ctx, matrixUnit)).To(Equal(want))

			By("a second run and a second noop: stable, nothing changes")
			again := agent(ctx, append([]string{"ensure"}, args...)...)
			Expect(again.Line).To(Equal(stable), again.Stdout+again.Stderr)
			Expect(again.Exit).To(Equal(0))
			noop = agent(ctx, append([]string{"ensure", "--noop"}, args...)...)
			Expect(noop.Line).To(Equal(stable), noop.Stdout+noop.Stderr)
			Expect(noop.Exit).To(Equal(0))
			Expect(state(ctx, matrixUnit)).To(Equal(want))
		},
		entries,
	)

	It("refuses an ensure value the seeds do not list (exit 1) and changes nothing", func(ctx SpecContext) {
		setState(ctx, from{active: true, enabled: false})
		for _, ensure := range []string{"restarted", "enabled", "Running"} {
			res := agent(ctx, "ensure", "service", matrixUnit, ensure)
			Expect(res.Exit).To(Equal(1), "%s: %s", ensure, res.Stdout)
			Expect(res.Stderr).To(ContainSubstring(fmt.Sprintf("%q is not one of running, stopped", ensure)))
		}
		Expect(state(ctx, matrixUnit)).To(Equal(from{active: true, enabled: false}.state()))
	})
})
