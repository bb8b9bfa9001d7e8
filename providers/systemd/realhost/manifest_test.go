package realhost_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// manifestDir is where the specs write their manifests inside the host.
const manifestDir = "/root/realhost"

// apply writes manifest as name.yaml inside the host and runs ccm-agent
// apply on it (extra flags before the path).
func apply(ctx context.Context, name, manifest string, flags ...string) agentRun {
	GinkgoHelper()
	path := manifestDir + "/" + name + ".yaml"
	Expect(host.WriteFile(path, []byte(manifest), 0o600)).To(Succeed())
	return agent(ctx, append(append([]string{"apply", "--no-report", "--detailed-exit-codes"}, flags...), path)...)
}

// eventLine is the line apply printed for the resource ref (type#name),
// as CCM prints it (" WARN  REF OUTCOME ensure=E runtime=D provider=P
// [noop=...|errors=...]"), without its level, runtime and provider.
func eventLine(r agentRun, ref string) string {
	GinkgoHelper()
	for _, l := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[1] != ref {
			continue
		}
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), f[0]))
		return runtimeProvider.ReplaceAllString(l, "")
	}
	Fail(fmt.Sprintf("apply printed no line for %s: %s%s", ref, r.Stdout, r.Stderr))
	return ""
}

// runtimeProvider is what eventLine leaves out of a line.
var runtimeProvider = regexp.MustCompile(` runtime=\S+ provider=\S*`)

// summary is apply's summary line without its duration.
func summary(r agentRun) string {
	GinkgoHelper()
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.Contains(l, " resources: ") {
			l, _, _ = strings.Cut(l, " in ")
			return l
		}
	}
	Fail("apply printed no summary: " + r.Stdout + r.Stderr)
	return ""
}

// indent indents every line of s by n spaces, for a YAML block scalar.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad) + "\n"
}

// fileAndService is a manifest of a file resource with content and a
// service that subscribes to it; before are resources listed first.
func fileAndService(path, content, service, ensure, before string) string {
	return fmt.Sprintf(`ccm:
  resources:
%s    - file:
        - %s:
            ensure: present
            content: |
%s            owner: root
            group: root
            mode: "0644"
    - service:
        - %s:
            ensure: %s
            subscribe: [file#%s]
`, before, path, indent(content, 14), service, ensure, path)
}

var _ = Describe("ccm-agent apply: restart on subscribe", Ordered, func() {
	const unit, conf = "web", "/etc/web.conf"
	ref := "service#" + unit

	BeforeAll(func(ctx SpecContext) {
		writeUnit(ctx, unit, sleeper("infinity"))
		sh(ctx, "systemctl start "+unit)
	})

	It("restarts a running service when the file it subscribes to changes (a new MainPID)", func(ctx SpecContext) {
		before := mainPID(ctx, unit)
		r := apply(ctx, "sub", fileAndService(conf, "v1", unit, "running", ""))
		Expect(r.Exit).To(Equal(0), r.Stdout+r.Stderr)
		Expect(eventLine(r, "file#"+conf)).To(Equal("file#" + conf + " changed ensure=present"))
		Expect(eventLine(r, ref)).To(Equal(ref + " refreshed ensure=running"))
		Expect(summary(r)).To(Equal("2 resources: 0 stable, 2 changed, 0 failed, 0 skipped, 1 refreshed"))
		Expect(state(ctx, unit).Active).To(Equal("active"))
		Expect(mainPID(ctx, unit)).NotTo(Equal(before), "systemd's MainPID did not change: not restarted")
	})

	It("does not restart it when the file did not change", func(ctx SpecContext) {
		before := mainPID(ctx, unit)
		r := apply(ctx, "sub", fileAndService(conf, "v1", unit, "running", ""))
		Expect(r.Exit).To(Equal(0), r.Stdout+r.Stderr)
		Expect(eventLine(r, ref)).To(Equal(ref + " stable ensure=running"))
		Expect(summary(r)).To(Equal("2 resources: 2 stable, 0 changed, 0 failed, 0 skipped, 0 refreshed"))
		Expect(mainPID(ctx, unit)).To(Equal(before))
	})

	It("under --noop says the seeds' \"Would have restarted\" and which change would refresh it (exit 5) and restarts nothing, writes nothing", func(ctx SpecContext) {
		before := mainPID(ctx, unit)
		r := apply(ctx, "sub", fileAndService(conf, "v2", unit, "running", ""), "--noop")
		Expect(r.Exit).To(Equal(5), r.Stdout+r.Stderr)
		Expect(eventLine(r, ref)).To(Equal(ref + " refreshed ensure=running noop=Would have restarted (would refresh: file#" + conf + " would change)"))
		Expect(mainPID(ctx, unit)).To(Equal(before))
		Expect(os.ReadFile(host.Path(conf))).To(Equal([]byte("v1\n")))
	})

	It("restarts it again when the file changes again", func(ctx SpecContext) {
		before := mainPID(ctx, unit)
		r := apply(ctx, "sub", fileAndService(conf, "v2", unit, "running", ""))
		Expect(r.Exit).To(Equal(0), r.Stdout+r.Stderr)
		Expect(eventLine(r, ref)).To(Equal(ref + " refreshed ensure=running"))
		Expect(mainPID(ctx, unit)).NotTo(Equal(before))
	})

	It("starts (not restarts) a stopped service that should run when the file changes", func(ctx SpecContext) {
		sh(ctx, "systemctl stop "+unit)
		r := apply(ctx, "sub", fileAndService(conf, "v3", unit, "running", ""))
		Expect(r.Exit).To(Equal(0), r.Stdout+r.Stderr)
		Expect(eventLine(r, ref)).To(Equal(ref + " changed ensure=running"))
		Expect(summary(r)).To(Equal("2 resources: 0 stable, 2 changed, 0 failed, 0 skipped, 0 refreshed"))
		Expect(state(ctx, unit).Active).To(Equal("active"))
	})

	It("ignores the change for a service that should be stopped: it is not started", func(ctx SpecContext) {
		sh(ctx, "systemctl stop "+unit)
		r := apply(ctx, "sub", fileAndService(conf, "v4", unit, "stopped", ""))
		Expect(r.Exit).To(Equal(0), r.Stdout+r.Stderr)
		Expect(eventLine(r, ref)).To(Equal(ref + " stable ensure=stopped"))
		Expect(state(ctx, unit).Active).To(Equal("inactive"))
	})
})

var _ = Describe("ccm-agent apply: a unit file changed through a file resource", Ordered, func() {
	const unit = "reload"
	path := "/etc/systemd/system/" + unit + ".service"
	ref := "service#" + unit

	// runs checks that systemd loaded the unit file with /bin/sleep arg and
	// that the service runs it, with no reload pending.
	runs := func(ctx context.Context, arg string) {
		GinkgoHelper()
		Expect(show(ctx, unit, "NeedDaemonReload")).To(Equal("no"), "systemd says the unit file changed on disk and was not reloaded")
		Expect(show(ctx, unit, "ExecStart")).To(ContainSubstring("argv[]=/bin/sleep " + arg + " ;"))
		Expect(cmdline(mainPID(ctx, unit))).To(Equal("/bin/sleep " + arg))
	}

	BeforeAll(func(ctx SpecContext) {
		writeUnit(ctx, unit, sleeper("1001"))
		writeUnit(ctx, "other", sleeper("infinity"))
		sh(ctx, "systemctl start "+unit)
		runs(ctx, "1001")
	})

	It("is loaded before the subscribed restart: the service runs the new ExecStart, no reload pending", func(ctx SpecContext) {
		r := apply(ctx, "reload", fileAndService(path, sleeper("2002"), unit, "running", ""))
		Expect(r.Exit).To(Equal(0), r.Stdout+r.Stderr)
		Expect(eventLine(r, "file#"+path)).To(Equal("file#" + path + " changed ensure=present"))
		Expect(eventLine(r, ref)).To(Equal(ref + " refreshed ensure=running"))
		runs(ctx, "2002")
	})

	It("under --noop says \"Would have restarted\" and leaves the unit file, systemd and the service as they were", func(ctx SpecContext) {
		pid := mainPID(ctx, unit)
		r := apply(ctx, "reload", fileAndService(path, sleeper("9009"), unit, "running", ""), "--noop")
		Expect(r.Exit).To(Equal(5), r.Stdout+r.Stderr)
		Expect(eventLine(r, ref)).To(Equal(ref + " refreshed ensure=running noop=Would have restarted (would refresh: file#" + path + " would change)"))
		Expect(os.ReadFile(host.Path(path))).To(Equal([]byte(sleeper("2002"))))
		runs(ctx, "2002")
		Expect(mainPID(ctx, unit)).To(Equal(pid))
	})

	It("is loaded also when another service was managed earlier in the same run", func(ctx SpecContext) {
		other := "    - service:\n        - other:\n            ensure: running\n"
		r := apply(ctx, "reload", fileAndService(path, sleeper("3003"), unit, "running", other))
		Expect(r.Exit).To(Equal(0), r.Stdout+r.Stderr)
		Expect(eventLine(r, "service#other")).To(Equal("service#other changed ensure=running"))
		Expect(eventLine(r, ref)).To(Equal(ref + " refreshed ensure=running"))
		runs(ctx, "3003")
	})

	It("is loaded for a stopped service that the run starts", func(ctx SpecContext) {
		sh(ctx, "systemctl stop "+unit)
		r := apply(ctx, "reload", fileAndService(path, sleeper("4004"), unit, "running", ""))
		Expect(r.Exit).To(Equal(0), r.Stdout+r.Stderr)
		Expect(eventLine(r, ref)).To(Equal(ref + " changed ensure=running"))
		runs(ctx, "4004")
	})
})

var _ = Describe("ccm-agent ensure service: units that cannot run", Ordered, func() {
	DescribeTable("a failing unit: ensure running fails with systemd's reason (exit 2), every time; --noop says \"Would have started\" and starts nothing",
		func(ctx SpecContext, unit, body string) {
			writeUnit(ctx, unit, body)
			ref := "service#" + unit

			noop := agent(ctx, "ensure", "--noop", "service", unit, "running")
			Expect(noop.Line).To(Equal(ref+" would change: Would have started"), noop.Stdout+noop.Stderr)
			Expect(noop.Exit).To(Equal(5))
			Expect(state(ctx, unit)).To(Equal(unitState{Active: "inactive", Enabled: "static"}))

			for range 2 {
				r := agent(ctx, "ensure", "service", unit, "running")
				Expect(r.Exit).To(Equal(2), r.Stdout+r.Stderr)
				Expect(r.Line).To(Equal(fmt.Sprintf("%s failed: service %s: start: systemctl start --system -- %s: systemctl failed: exit status 1: "+
					"Job for %s.service failed because the control process exited with error code.; "+
					`See "systemctl status %s.service" and "journalctl -xeu %s.service" for details.`, ref, unit, unit, unit, unit, unit)))
				Expect(state(ctx, unit).Active).To(Equal("failed"))
			}

			r := agent(ctx, "ensure", "service", unit, "stopped")
			Expect(r.Line).To(Equal(ref+" stable (stopped)"), r.Stdout+r.Stderr)
			Expect(r.Exit).To(Equal(0))
		},
		Entry("Type=oneshot whose command exits 1", "oneshotfail", "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'exit 1'\n"),
		Entry("Type=forking whose ExecStart is /bin/false", "forkfail", "[Service]\nType=forking\nExecStart=/bin/false\n"),
	)

	Context("a masked unit", Ordered, func() {
		const unit = "masked"
		ref := "service#" + unit
		masked := unitState{Active: "inactive", Enabled: "masked"}

		BeforeAll(func(ctx SpecContext) {
			// A vendor unit, so that mask can put its /dev/null link in /etc.
			Expect(host.WriteFile("/usr/lib/systemd/system/"+unit+".service", []byte(sleeper("infinity")), 0o644)).To(Succeed())
			sh(ctx, "systemctl daemon-reload; systemctl mask "+unit+" 2>/dev/null")
			Expect(state(ctx, unit)).To(Equal(masked))
		})

		AfterEach(func(ctx SpecContext) {
			Expect(state(ctx, unit)).To(Equal(masked), "the masked unit changed")
			Expect(os.Readlink(host.Path("/etc/systemd/system/" + unit + ".service"))).To(Equal("/dev/null"))
		})

		// A masked unit cannot be started or enabled: the service type says
		// so before calling systemctl, under --noop as in a run, instead of
		// a noop promising "Would have started" that the run cannot keep.
		failsMasked := ref + " failed: service masked: the unit is masked: systemctl unmask it first"

		DescribeTable("ensure running, or enable: true, fails saying it is masked (exit 2), under --noop as in a run, and changes nothing",
			func(ctx SpecContext, args ...string) {
				r := agent(ctx, args...)
				Expect(r.Line).To(Equal(failsMasked), r.Stdout+r.Stderr)
				Expect(r.Exit).To(Equal(2))
			},
			Entry("ensure running", "ensure", "service", unit, "running"),
			Entry("ensure running under --noop", "ensure", "--noop", "service", unit, "running"),
			Entry("ensure running with enable: true", "ensure", "service", unit, "running", "--enable"),
			Entry("ensure running with enable: true under --noop", "ensure", "--noop", "service", unit, "running", "--enable"),
			Entry("ensure stopped with enable: true", "ensure", "service", unit, "stopped", "--enable"),
			Entry("ensure stopped with enable: true under --noop", "ensure", "--noop", "service", unit, "stopped", "--enable"),
		)

		It("ensure stopped, and enable: false, are stable: a masked unit is stopped and not enabled", func(ctx SpecContext) {
			for _, args := range [][]string{{"stopped"}, {"stopped", "--disable"}, {"--noop", "stopped"}, {"--noop", "stopped", "--disable"}} {
				cmd := []string{"ensure"}
				if args[0] == "--noop" {
					cmd, args = append(cmd, "--noop"), args[1:]
				}
				r := agent(ctx, append(append(cmd, "service", unit), args...)...)
				Expect(r.Line).To(Equal(ref+" stable (stopped)"), r.Stdout+r.Stderr)
				Expect(r.Exit).To(Equal(0))
			}
		})
	})

	Context("a missing unit", func() {
		const unit = "nosuchunit"

		DescribeTable("fails naming the unit (exit 2) and creates nothing",
			func(ctx SpecContext, args ...string) {
				r := agent(ctx, append(args, "service", unit, "running")...)
				Expect(r.Exit).To(Equal(2), r.Stdout+r.Stderr)
				Expect(r.Line).To(Equal("service#nosuchunit failed: service nosuchunit: status: systemctl is-enabled --system -- nosuchunit: service not found"))
				Expect(state(ctx, unit)).To(Equal(unitState{Active: "inactive"}))
				Expect(host.Path("/etc/systemd/system/" + unit + ".service")).NotTo(BeAnExistingFile())
				Expect(show(ctx, unit, "LoadState")).To(Equal("not-found"))
			},
			Entry("ensure running", "ensure"),
			Entry("ensure running under --noop", "ensure", "--noop"),
		)

		It("fails the same way in a manifest, and the run says so (exit 2)", func(ctx SpecContext) {
			r := apply(ctx, "missing", "ccm:\n  resources:\n    - service:\n        - "+unit+":\n            ensure: stopped\n            enable: false\n")
			Expect(r.Exit).To(Equal(2), r.Stdout+r.Stderr)
			Expect(eventLine(r, "service#"+unit)).To(Equal("service#nosuchunit failed ensure=stopped errors=service nosuchunit: status: systemctl is-enabled --system -- nosuchunit: service not found"))
			Expect(summary(r)).To(Equal("1 resources: 0 stable, 0 changed, 1 failed, 0 skipped, 0 refreshed"))
		})
	})
})

var _ = Describe("ccm-agent ensure service: a unit on its way up", Ordered, func() {
	// A crash-looping unit: it fails at once and systemd starts it again
	// after RestartSec. Between the two it is "activating" (SubState
	// auto-restart): not running, but not stopped either. (Type=oneshot, so
	// that a start or restart fails as systemctl returns, not a moment after.)
	const unit = "crashloop"
	ref := "service#" + unit

	BeforeAll(func(ctx SpecContext) {
		writeUnit(ctx, unit, "[Service]\nType=oneshot\nExecStart=/bin/false\nRestart=on-failure\nRestartSec=1h\n")
	})

	BeforeEach(func(ctx SpecContext) {
		// restart, not start: a start waits for RestartSec when it is already
		// waiting to be restarted.
		sh(ctx, "systemctl restart "+unit+" 2>/dev/null || true")
		Eventually(show).WithContext(ctx).WithArguments(unit, "SubState").WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal("auto-restart"))
		Expect(state(ctx, unit).Active).To(Equal("activating"))
	})

	It("is shown by systemd as the unit tests' captured output says", func(ctx SpecContext) {
		res := run(ctx, "systemctl", "show", "--system", "--property=SubState", "--", unit)
		Expect(os.ReadFile("../testdata/show/substate-auto-restart.txt")).To(Equal([]byte(res.Stdout)))
		res = run(ctx, "systemctl", "is-active", "--system", "--", unit)
		Expect(os.ReadFile("../testdata/is-active/activating.txt")).To(Equal([]byte(res.Stdout)))
		Expect(res.Exit).To(Equal(3))
	})

	It("ensure stopped stops it, so systemd does not start it again; --noop says \"Would have stopped\" first", func(ctx SpecContext) {
		noop := agent(ctx, "ensure", "--noop", "service", unit, "stopped")
		Expect(noop.Line).To(Equal(ref+" would change: Would have stopped"), noop.Stdout+noop.Stderr)
		Expect(noop.Exit).To(Equal(5))
		Expect(show(ctx, unit, "SubState")).To(Equal("auto-restart"))

		r := agent(ctx, "ensure", "service", unit, "stopped")
		Expect(r.Line).To(Equal(ref+" changed (stopped)"), r.Stdout+r.Stderr)
		Expect(r.Exit).To(Equal(0))
		Expect(show(ctx, unit, "SubState")).To(BeElementOf("dead", "failed"), "systemd will still start it again")

		again := agent(ctx, "ensure", "service", unit, "stopped")
		Expect(again.Line).To(Equal(ref+" stable (stopped)"), again.Stdout+again.Stderr)
	})

	It("ensure running restarts it at once, not after RestartSec (an hour), and fails with systemd's reason (exit 2)", func(ctx SpecContext) {
		r := agent(ctx, "ensure", "service", unit, "running")
		Expect(r.Exit).To(Equal(2), r.Stdout+r.Stderr)
		Expect(r.Line).To(Equal(ref+" failed: service crashloop: start: systemctl restart --system -- crashloop: systemctl failed: exit status 1: "+
			"Job for crashloop.service failed because the control process exited with error code.; "+
			`See "systemctl status crashloop.service" and "journalctl -xeu crashloop.service" for details.`), r.Stdout)
		Expect(show(ctx, unit, "SubState")).To(Equal("auto-restart"), "it failed again, and systemd will try again after RestartSec")
	})
})
