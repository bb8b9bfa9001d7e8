package realhost_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/lab"
)

func TestRealhost(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Service provider on a real systemd host")
}

// host is the one lab host every spec drives; it has the project's .deb
// installed (ccm-agent at /usr/bin/ccm-agent).
var host *lab.Host

// hostName is the lab host's name, and so its hostname.
const hostName = "svc1"

// setupTimeout bounds building the .deb, booting the host and installing
// the package.
const setupTimeout = 8 * time.Minute

// bootHost builds the project's .deb once, boots one lab host and installs
// the package in it. A machine that cannot run a lab fails here, with
// lab.Check's reason.
func bootHost(ctx context.Context) {
	Expect(lab.Check()).To(Succeed(), "the real-host service specs need a machine that can run lab hosts (root, cgroup2, overlayfs, systemd); they are never skipped")
	root, err := filepath.Abs("../../..")
	Expect(err).NotTo(HaveOccurred())
	Expect(filepath.Join(root, "go.mod")).To(BeARegularFile())
	out, err := os.MkdirTemp("", "ccm-svc-realhost-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, out)

	deb, err := lab.BuildDeb(ctx, root, out)
	Expect(err).NotTo(HaveOccurred())
	l, err := lab.Start(ctx, hostName)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(l.Close)
	host = l.Host(hostName)
	Expect(host.InstallDeb(ctx, deb)).To(Succeed())
	GinkgoWriter.Printf("lab host %s booted in %s\n", hostName, host.BootTime().Round(time.Millisecond))
}

// run runs argv inside the host. A command that ran and exited non-zero is
// a result, not a failure; one that could not be run fails the spec.
func run(ctx context.Context, argv ...string) lab.Result {
	GinkgoHelper()
	res, err := host.Run(ctx, argv...)
	if err != nil {
		Expect(errors.Is(err, lab.ErrCommand)).To(BeTrue(), "%v", err)
		Expect(res.Exit).NotTo(BeZero(), "could not run %q in the host: %v", argv, err)
	}
	return res
}

// sh runs a shell script inside the host and fails the spec when it exits
// non-zero.
func sh(ctx context.Context, script string) string {
	GinkgoHelper()
	res, err := host.Run(ctx, "sh", "-ec", script)
	Expect(err).NotTo(HaveOccurred())
	return res.Stdout
}

// agentRun is what one ccm-agent command printed and its exit code.
type agentRun struct {
	// Line is the first line of standard output: the resource's outcome
	// for ensure, with its duration cut off.
	Line   string
	Stdout string
	Stderr string
	Exit   int
}

// killedBefore matches a run in which a resource failed because a systemctl
// call of its first status was killed (SIGKILL, exit status 137) and which
// changed nothing.
// (ensure's line "REF failed: ERROR", apply's "ERROR REF failed ... errors=ERROR")
var killedBefore = regexp.MustCompile(`(?m)service#\S+ failed(?::| .*errors=) service \S+: status: systemctl [^:]+: systemctl failed: exit status 137$`)

// agent runs the installed ccm-agent inside the host.
//
// A run whose first status read was killed, having changed nothing, is run
// again (at most four times), saying so: agents built before the runner judged
// markers by PID namespace (ccm-agent runs of other checkouts on this
// machine) SIGKILL the commands of an agent in another PID namespace, such
// as a lab host's, when they start. This suite's agent, built from this
// tree, kills nobody's; nothing in it is SIGKILLed otherwise.
func agent(ctx context.Context, args ...string) agentRun {
	GinkgoHelper()
	for attempt := 1; ; attempt++ {
		res := run(ctx, append([]string{"ccm-agent"}, args...)...)
		line, _, _ := strings.Cut(res.Stdout, "\n")
		if i := strings.LastIndex(line, " in "); i > 0 && strings.Contains(line, " changed") {
			line = line[:i]
		}
		r := agentRun{Line: line, Stdout: res.Stdout, Stderr: res.Stderr, Exit: res.Exit}
		if attempt < 5 && killedBefore.MatchString(res.Stdout) && !strings.Contains(res.Stdout, " changed") {
			GinkgoWriter.Printf("ccm-agent %s: a systemctl was killed from outside the host before anything changed; running it again:\n%s", strings.Join(args, " "), res.Stdout)
			continue
		}
		return r
	}
}

// unitState is what systemd says of a unit: systemctl is-active and
// is-enabled (empty when it prints nothing).
type unitState struct{ Active, Enabled string }

// state asks the host's systemd for unit's state.
func state(ctx context.Context, unit string) unitState {
	GinkgoHelper()
	a := run(ctx, "systemctl", "is-active", "--", unit)
	e := run(ctx, "systemctl", "is-enabled", "--", unit)
	return unitState{Active: strings.TrimSpace(a.Stdout), Enabled: strings.TrimSpace(e.Stdout)}
}

// show returns one property of unit from systemctl show.
func show(ctx context.Context, unit, property string) string {
	GinkgoHelper()
	res := run(ctx, "systemctl", "show", "--property="+property, "--value", "--", unit)
	Expect(res.Exit).To(BeZero(), "systemctl show %s: %s", unit, res.Stderr)
	return strings.TrimSpace(res.Stdout)
}

// mainPID is the unit's MainPID, once systemd has one (a start or restart
// job is over when systemctl returns, so this settles at once; the bound
// only keeps a broken host from hanging the suite).
func mainPID(ctx context.Context, unit string) string {
	GinkgoHelper()
	var pid string
	Eventually(func() string {
		pid = show(ctx, unit, "MainPID")
		return pid
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).ShouldNot(Equal("0"))
	return pid
}

// cmdline is the command line of pid inside the host, its arguments joined
// by spaces.
func cmdline(pid string) string {
	GinkgoHelper()
	b, err := os.ReadFile(host.Path("/proc/" + pid + "/cmdline"))
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// writeUnit writes a unit file into the host's /etc/systemd/system and
// reloads systemd, as an administrator would.
func writeUnit(ctx context.Context, name, body string) {
	GinkgoHelper()
	Expect(host.WriteFile("/etc/systemd/system/"+name+".service", []byte(body), 0o644)).To(Succeed())
	sh(ctx, "systemctl daemon-reload")
}

// sleeper is a unit that runs /bin/sleep and can be enabled.
func sleeper(arg string) string {
	return "[Unit]\nDescription=ccm real-host spec unit\n[Service]\nExecStart=/bin/sleep " + arg + "\n[Install]\nWantedBy=multi-user.target\n"
}
