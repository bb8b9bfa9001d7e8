package scripts_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"os/user"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

// demo starts demo.sh in a process group of its own, as a terminal would
// run it, with a TMPDIR of its own so the spec can see what it leaves.
func demo(tmp string, env ...string) (*gexec.Session, *exec.Cmd) {
	GinkgoHelper()
	cmd := exec.Command("bash", "demo.sh")
	cmd.Env = append(os.Environ(), append([]string{"BIN=" + binDir, "TMPDIR=" + tmp, "DEMO_NO_WAIT=1", "DEMO_PORT=", "DEMO_UI_PORT=", "DEMO_NO_UI="}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return s, cmd
}

// holdPort listens on a free loopback port for the rest of the spec and
// returns the port.
func holdPort() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(l.Close)
	_, port, err := net.SplitHostPort(l.Addr().String())
	Expect(err).NotTo(HaveOccurred())
	return port
}

// leftNothing asserts the demo's temporary directory is gone and no
// process of its group is left.
func leftNothing(tmp string, cmd *exec.Cmd) {
	GinkgoHelper()
	entries, err := os.ReadDir(tmp)
	Expect(err).NotTo(HaveOccurred())
	Expect(entries).To(BeEmpty(), "the demo's temporary directory is removed")
	Eventually(func() error { return syscall.Kill(-cmd.Process.Pid, 0) }).
		WithTimeout(5*time.Second).Should(MatchError(syscall.ESRCH), "every process the demo started has exited")
}

// refused says nothing accepts connections on addr any more.
func refused(addr string) {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
	}
	Expect(err).To(HaveOccurred(), "nothing listens on %s after the demo", addr)
}

var _ = Describe("make demo (scripts/demo.sh)", func() {
	DescribeTable("fails within seconds with the program's own error when the port it is given is taken",
		func(variable, program, message string) {
			tmp := GinkgoT().TempDir()
			s, cmd := demo(tmp, variable+"="+holdPort())
			Eventually(s).WithTimeout(20 * time.Second).Should(gexec.Exit())
			Expect(s.ExitCode()).NotTo(Equal(0))
			Expect(s.Err).To(gbytes.Say(regexp.QuoteMeta(message) + `.*bind: address already in use`))
			Expect(s.Err).To(gbytes.Say(regexp.QuoteMeta("demo failed: " + program + " exited with status 1 before it was ready")))
			leftNothing(tmp, cmd)
		},
		Entry("DEMO_PORT, the broker", "DEMO_PORT", "ccm-broker", "ccm-broker: broker not ready: Error listening on port: 127.0.0.1:"),
		Entry("DEMO_UI_PORT, the dashboard", "DEMO_UI_PORT", "the dashboard (ccm-orch ui)", "ccm-orch: ui: listen tcp 127.0.0.1:"),
	)

	It("tells its story on free ports, then stops everything it started and removes its directory", func() {
		tmp := GinkgoT().TempDir()
		s, cmd := demo(tmp)
		Eventually(s).WithTimeout(2 * time.Minute).Should(gexec.Exit(0))
		out := string(s.Out.Contents())
		Expect(out).To(ContainSubstring("repaired after"))
		Expect(out).To(MatchRegexp(`4 hosts: 4 converged`))
		broker := regexp.MustCompile(`broker listening on nats://(127\.0\.0\.1:\d+)`).FindStringSubmatch(out)
		Expect(broker).To(HaveLen(2), out)
		ui := regexp.MustCompile(`Dashboard: http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(out)
		Expect(ui).To(HaveLen(2), out)
		Expect(ui[1]).NotTo(HaveSuffix(":8080"), "a free port, not a fixed one")
		Expect(out).To(ContainSubstring("removing " + tmp + "/ccm-demo."))
		leftNothing(tmp, cmd)
		refused(broker[1])
		refused(ui[1])

		// Not a terminal: no escape codes, and it says first how it ends.
		Expect(out).NotTo(ContainSubstring("\x1b"))
		Expect(out).To(HavePrefix("This demo runs a whole fleet on this machine, shows its dashboard address, then stops everything and cleans up (not waiting on the dashboard: stdin is not a terminal or DEMO_NO_WAIT is set).\n"))

		// Every command is shown, the background ones with where their output goes.
		work := regexp.MustCompile(`removing (\S+)`).FindStringSubmatch(out)[1]
		for _, line := range []string{
			"$ " + binDir + "/ccm-broker --listen 127.0.0.1:0 --store " + work + "/store >" + work + "/broker.log 2>&1 &\n",
			"$ " + binDir + `/ccm-agent simulate --count 6 --vary os=debian\,rhel --vary role=web\,db --policy ` + work + "/policy.yaml --state-dir " + work + "/agents >" + work + "/agents.log 2>&1 &\n",
			"$ " + binDir + "/ccm-orch ui --listen 127.0.0.1:0 >" + work + "/ui.log 2>&1 &\n",
			"$ export CCM_SERVER=nats://" + broker[1] + "\n",
		} {
			Expect(out).To(ContainSubstring(line))
		}

		// The repair is shown quoted (printf %q) and with its report, and
		// the line shown, pasted into a shell, is the command that ran.
		repair := regexp.MustCompile(`(?m)^== Repair it.*\n\$ (.*)\n(?:.*\n)*?(3 expected.*)\n`).FindStringSubmatch(out)
		Expect(repair).NotTo(BeNil(), out)
		Expect(repair[2]).To(HavePrefix("3 expected, 3 replied: 2 ok, 1 changed, 0 failed"))
		argv, err := exec.Command("bash", "-c", "set -- "+repair[1]+"; printf '%s\\n' \"$@\"").Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Split(strings.TrimSuffix(string(argv), "\n"), "\n")).To(Equal([]string{
			binDir + "/ccm-orch", "ensure", "file", work + "/hosts/{{ lookup('facts.identity') }}/motd",
			"--content", "managed by ccm on {{ lookup('facts.identity') }} ({{ lookup('facts.role') }})",
			"--owner", owner(), "--group", group(), "--mode", "0644", "--where", "os=debian",
		}))
	})

	It("says on a terminal that it ends on the dashboard until Ctrl-C, with bold headings", func() {
		tmp := GinkgoT().TempDir()
		// script(1) gives the demo a terminal for stdin and stdout; a taken
		// broker port ends it after its first lines.
		cmd := exec.Command("script", "-qfec", "bash demo.sh", "/dev/null")
		cmd.Env = append(os.Environ(), "BIN="+binDir, "TMPDIR="+tmp, "DEMO_NO_WAIT=", "DEMO_UI_PORT=", "DEMO_NO_UI=", "DEMO_PORT="+holdPort())
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s).WithTimeout(20 * time.Second).Should(gexec.Exit())
		out := strings.ReplaceAll(string(s.Out.Contents()), "\r\n", "\n")
		Expect(out).To(HavePrefix("This demo runs a whole fleet on this machine and ends on its dashboard, served until you press Ctrl-C; then it stops everything and cleans up.\n"))
		Expect(out).To(ContainSubstring("\n\x1b[1m== Starting an embedded NATS broker"))
		Expect(out).To(ContainSubstring("demo failed: ccm-broker exited with status 1 before it was ready"))
		entries, err := os.ReadDir(tmp)
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(BeEmpty(), "the demo's temporary directory is removed")
	})

	It("stops every process it started and removes its directory on Ctrl-C", func() {
		tmp := GinkgoT().TempDir()
		s, cmd := demo(tmp)
		Eventually(s.Out).WithTimeout(time.Minute).Should(gbytes.Say(`Who is out there\?`))
		Expect(s.Out.Contents()).NotTo(ContainSubstring("demo failed"))
		// A terminal's Ctrl-C goes to the whole foreground process group.
		Expect(syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)).To(Succeed())
		Eventually(s).WithTimeout(20 * time.Second).Should(gexec.Exit(130))
		broker := regexp.MustCompile(`broker listening on nats://(127\.0\.0\.1:\d+)`).FindStringSubmatch(string(s.Out.Contents()))
		Expect(broker).To(HaveLen(2))
		leftNothing(tmp, cmd)
		refused(broker[1])
		_, err := os.Stat(tmp)
		Expect(errors.Is(err, os.ErrNotExist)).To(BeFalse(), "only the demo's own directory under TMPDIR is removed")
	})
})

// owner and group are the names of the user and group running the suite,
// as the demo's $(id -un) and $(id -gn).
func owner() string {
	GinkgoHelper()
	u, err := user.Current()
	Expect(err).NotTo(HaveOccurred())
	return u.Username
}

func group() string {
	GinkgoHelper()
	u, err := user.Current()
	Expect(err).NotTo(HaveOccurred())
	g, err := user.LookupGroupId(u.Gid)
	Expect(err).NotTo(HaveOccurred())
	return g.Name
}
