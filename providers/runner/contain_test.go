package runner_test

import (
	"context"
	"fmt"
	"github.com/ccm-fleet/ccm/internal/proctest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/runner"
)

func expectGone(pid int) {
	GinkgoHelper()
	Eventually(proctest.Running).WithArguments(pid).WithTimeout(10*time.Second).WithPolling(20*time.Millisecond).
		Should(BeFalse(), "process %d escaped the command", pid)
}

var _ = Describe("Exec containment", func() {
	type mode struct {
		noSupervisor bool
		noCgroup     bool
		want         runner.Mechanism
	}
	// newExec returns the runner for a mode, closing its supervisor when the
	// spec ends.
	newExec := func(m mode) runner.Exec {
		if m.noSupervisor {
			return runner.Exec{}
		}
		sup, err := runner.NewSupervisor(runner.SupervisorOptions{Instance: "test", NoCgroup: m.noCgroup})
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sup.Close)
		if sup.Mechanism() != m.want {
			Skip("this host offers " + string(sup.Mechanism()) + ", not " + string(m.want))
		}
		return runner.Exec{Supervisor: sup}
	}
	sh := func(script string, timeout time.Duration) runner.Command {
		return runner.Command{Path: "/bin/sh", Args: []string{"-c", script}, Timeout: timeout}
	}

	for _, m := range []mode{
		{want: runner.MechanismCgroup},
		{noCgroup: true, want: runner.MechanismSubreaper},
		{noSupervisor: true},
	} {
		name := string(m.want)
		if m.noSupervisor {
			name = "no supervisor"
		}
		Context(name, func() {
			var dir, pidFile string
			BeforeEach(func() {
				dir = GinkgoT().TempDir()
				pidFile = filepath.Join(dir, "grandchild.pid")
				proctest.KillAfter(pidFile)
			})

			It("kills no command for another: 200 run at once, each ends as it exits", func() {
				r := newExec(m)
				var wg sync.WaitGroup
				errs := make(chan error, 200)
				for i := range 200 {
					wg.Go(func() {
						res, err := r.Run(context.Background(), sh(fmt.Sprintf("sleep 0.0%d; exit %d", i%10, i%3), 30*time.Second))
						switch {
						case err != nil:
							errs <- fmt.Errorf("command %d: %w", i, err)
						case res.ExitCode != i%3:
							errs <- fmt.Errorf("command %d: exit %d, want %d (killed?)", i, res.ExitCode, i%3)
						}
					})
				}
				wg.Wait()
				close(errs)
				var got []string
				for err := range errs {
					got = append(got, err.Error())
				}
				Expect(got).To(BeEmpty())
			})

			It("kills a setsid grandchild when the command times out", func() {
				r := newExec(m)
				_, err := r.Run(context.Background(), sh("setsid sleep 300 & echo $! > "+pidFile+"; sleep 300", time.Second))
				Expect(err).To(MatchError(runner.ErrTimeout))
				expectGone(proctest.PidIn(pidFile))
			})

			It("kills a setsid grandchild when ctx is cancelled", func() {
				r := newExec(m)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				canceller := make(chan struct{})
				go func() {
					defer close(canceller)
					defer GinkgoRecover()
					proctest.PidIn(pidFile)
					cancel()
				}()
				_, err := r.Run(ctx, sh("setsid sleep 300 & echo $! > "+pidFile+"; sleep 300", 0))
				<-canceller
				Expect(err).To(MatchError(context.Canceled))
				expectGone(proctest.PidIn(pidFile))
			})

			It("kills a double-forked, setsid grandchild", func() {
				r := newExec(m)
				inner := filepath.Join(dir, "inner.pid")
				proctest.KillAfter(inner)
				script := `(setsid sh -c "sleep 300 & echo \$! > ` + pidFile + `; echo \$\$ > ` + inner + `; wait" &); sleep 300`
				_, err := r.Run(context.Background(), sh(script, time.Second))
				Expect(err).To(MatchError(runner.ErrTimeout))
				expectGone(proctest.PidIn(pidFile))
				expectGone(proctest.PidIn(inner))
			})

			It("kills an orphan that cleared its environment and called setsid", func() {
				if m.noSupervisor {
					Skip("without a subreaper such an orphan goes to init unseen (documented)")
				}
				r := newExec(m)
				script := "(setsid env -i /bin/sleep 300 & echo $! > " + pidFile + "); sleep 300"
				_, err := r.Run(context.Background(), sh(script, time.Second))
				Expect(err).To(MatchError(runner.ErrTimeout))
				expectGone(proctest.PidIn(pidFile))
			})

			It("kills background processes when the command ends normally", func() {
				r := newExec(m)
				// The background sleeper keeps the command's stdout open.
				res, err := r.Run(context.Background(), sh("setsid sleep 300 & echo $! > "+pidFile+"; echo done", 0))
				Expect(err).ToNot(HaveOccurred())
				Expect(res.ExitCode).To(Equal(0))
				Expect(string(res.Stdout)).To(Equal("done\n"))
				expectGone(proctest.PidIn(pidFile))
			})
		})
	}

	It("reaps the orphans it kills, as child subreaper", func() {
		sup, err := runner.NewSupervisor(runner.SupervisorOptions{Instance: "test", NoCgroup: true})
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sup.Close)
		pidFile := filepath.Join(GinkgoT().TempDir(), "orphan.pid")
		proctest.KillAfter(pidFile)
		_, err = runner.Exec{Supervisor: sup}.Run(context.Background(),
			sh("(setsid sleep 300 & echo $! > "+pidFile+"); sleep 300", time.Second))
		Expect(err).To(MatchError(runner.ErrTimeout))
		pid := proctest.PidIn(pidFile)
		// Not a zombie of this process either: its entry is gone.
		Eventually(func() error { _, err := os.Stat("/proc/" + strconv.Itoa(pid)); return err }).
			WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(MatchError(os.ErrNotExist))
	})

	It("leaves the exit status of other children of this process to their owner", func() {
		sup, err := runner.NewSupervisor(runner.SupervisorOptions{Instance: "test", NoCgroup: true})
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sup.Close)
		// A child started elsewhere in the process, exiting while the reaper
		// runs: its status must still reach os/exec.
		cmd := exec.Command("/bin/sh", "-c", "exit 7")
		Expect(cmd.Start()).To(Succeed())
		_, err = runner.Exec{Supervisor: sup}.Run(context.Background(), sh("sleep 0.2", 0))
		Expect(err).ToNot(HaveOccurred())
		err = cmd.Wait()
		var exitErr *exec.ExitError
		Expect(err).To(BeAssignableToTypeOf(exitErr))
		Expect(cmd.ProcessState.ExitCode()).To(Equal(7))
	})
})

var _ = Describe("Supervisor.KillLeftovers", func() {
	// deadOwner returns an owner tag "<pid>.<start>" of a process that has
	// ended.
	deadOwner := func() string {
		cmd := exec.Command("/bin/true")
		Expect(cmd.Run()).To(Succeed())
		return strconv.Itoa(cmd.Process.Pid) + ".1"
	}
	selfOwner := func() string {
		b, err := os.ReadFile("/proc/self/stat")
		Expect(err).ToNot(HaveOccurred())
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		return strconv.Itoa(os.Getpid()) + "." + f[19]
	}
	// sleeper starts a setsid sleep carrying marker, killed when the spec
	// ends whatever happens.
	sleeper := func(marker string) *exec.Cmd {
		cmd := exec.Command("/bin/sleep", "300")
		cmd.Env = []string{runner.MarkerEnv + "=" + marker}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		Expect(cmd.Start()).To(Succeed())
		waited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(waited) }()
		DeferCleanup(func() { _ = cmd.Process.Kill(); <-waited })
		// Until it has exec'd, the child is a copy of this process with
		// this process's environment: no marker to find yet (seen under
		// load as a leftover not killed).
		cmdline := fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)
		Eventually(func() string { b, _ := os.ReadFile(cmdline); return string(b) }).Should(HavePrefix("/bin/sleep\x00"))
		return cmd
	}

	for _, noCgroup := range []bool{false, true} {
		It("kills only processes of a dead agent of the same instance (noCgroup="+strconv.FormatBool(noCgroup)+")", func() {
			sup, err := runner.NewSupervisor(runner.SupervisorOptions{Instance: "leftovers", NoCgroup: noCgroup})
			Expect(err).ToNot(HaveOccurred())
			DeferCleanup(sup.Close)

			orphan := sleeper("leftovers." + deadOwner() + ".1")
			live := sleeper("leftovers." + selfOwner() + ".1")
			other := sleeper("elsewhere." + deadOwner() + ".1")
			unmarked := sleeper("")

			got, err := sup.KillLeftovers(context.Background())
			Expect(err).ToNot(HaveOccurred())
			Expect(got.Processes).To(Equal(1))
			expectGone(orphan.Process.Pid)
			for _, c := range []*exec.Cmd{live, other, unmarked} {
				Expect(proctest.Running(c.Process.Pid)).To(BeTrue(), "KillLeftovers killed %v", c.Env)
			}
		})
	}

	// An agent in a container (its own PID namespace) marks its commands
	// with pids of that namespace; seen from the machine, such a pid names
	// another process or none, so its owner looks gone. The machine's agent
	// must leave them alone (found when an agent in a lab host had its
	// systemctl calls killed, exit 137, by ccm-agent runs on the machine).
	It("leaves alone the commands of an agent in another PID namespace", func() {
		sup, err := runner.NewSupervisor(runner.SupervisorOptions{Instance: "leftovers"})
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sup.Close)

		// PID 1 of a new PID namespace: the agent of its namespace, alive,
		// whose command it becomes (exec keeps its pid and start time).
		cmd := exec.Command("/bin/sh", "-c", `read -r stat < /proc/self/stat; set -- $stat; shift 21; exec env `+runner.MarkerEnv+`=leftovers.1.$1.1 /bin/sleep 300`)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
		Expect(cmd.Start()).To(Succeed(), "a new PID namespace needs root, as the rest of make test")
		waited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(waited) }()
		DeferCleanup(func() { _ = cmd.Process.Kill(); <-waited })
		environ := fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)
		Eventually(func() string { b, _ := os.ReadFile(environ); return string(b) }).Should(ContainSubstring(runner.MarkerEnv + "=leftovers.1."))

		got, err := sup.KillLeftovers(context.Background())
		Expect(err).ToNot(HaveOccurred())
		Expect(got.Processes).To(Equal(0))
		Expect(proctest.Running(cmd.Process.Pid)).To(BeTrue(), "KillLeftovers killed a command of another PID namespace's agent")
	})

	It("kills and removes a dead agent's exec cgroup", func() {
		sup, err := runner.NewSupervisor(runner.SupervisorOptions{Instance: "leftovers"})
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sup.Close)
		if sup.Mechanism() != runner.MechanismCgroup {
			Skip("no cgroups here")
		}
		// A process that cleared its environment, in the cgroup a dead agent
		// made for one of its commands.
		own, err := os.ReadFile("/proc/self/cgroup")
		Expect(err).ToNot(HaveOccurred())
		rel := strings.TrimSpace(strings.TrimPrefix(string(own[strings.Index(string(own), "0::"):]), "0::"))
		mount := "/sys/fs/cgroup/unified"
		if _, err := os.Stat(mount + "/cgroup.procs"); err != nil {
			mount = "/sys/fs/cgroup"
		}
		stale := filepath.Join(mount, rel, "ccm-exec.leftovers", deadOwner()+".9")
		Expect(os.Mkdir(stale, 0o755)).To(Succeed())
		DeferCleanup(func() { _ = os.Remove(stale) })
		c := sleeper("")
		Expect(os.WriteFile(filepath.Join(stale, "cgroup.procs"), []byte(strconv.Itoa(c.Process.Pid)), 0)).To(Succeed())

		got, err := sup.KillLeftovers(context.Background())
		Expect(err).ToNot(HaveOccurred())
		Expect(got.Cgroups).To(Equal(1))
		expectGone(c.Process.Pid)
		Expect(stale).ToNot(BeADirectory())
	})
})
