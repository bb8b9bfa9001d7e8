package lab_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ccm-fleet/ccm/internal/lab"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// gone reports whether pid no longer runs (or is a zombie nobody reaps).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// leftovers lists what a lab owned by the process owner left on the
// machine: its cgroups, its scratch directory and mounts of its hosts.
// (Other packages' labs may run at the same time: only this one counts.)
func leftovers(owner int, dir string, hosts ...string) []string {
	var left []string
	for _, pattern := range []string{"/sys/fs/cgroup/*/ccm-lab/" + fmt.Sprint(owner) + "-*", "/sys/fs/cgroup/ccm-lab/" + fmt.Sprint(owner) + "-*"} {
		matches, _ := filepath.Glob(pattern)
		left = append(left, matches...)
	}
	if _, err := os.Stat(dir); err == nil {
		left = append(left, dir)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(mounts), "\n") {
		for _, h := range hosts {
			if strings.Contains(l, " lab-"+h+" ") || strings.Contains(l, dir) {
				left = append(left, l)
			}
		}
	}
	return left
}

var _ = Describe("lab hosts", Ordered, func() {
	It("runs on this machine: a machine that cannot run them fails the suite, it is never skipped", func() {
		Expect(lab.Check()).To(Succeed(), "the real-host specs need root, cgroup2, overlayfs and systemd")
	})

	It("refuses bad host names before starting anything", func(ctx SpecContext) {
		for _, names := range [][]string{{}, {"Web1"}, {"a b"}, {"-x"}, {strings.Repeat("a", 64)}, {"h1", "h1"}} {
			_, err := lab.Start(ctx, names...)
			Expect(err).To(HaveOccurred(), "%q", names)
		}
		Expect(leftovers(os.Getpid(), "/nonexistent")).To(BeEmpty())
	})

	It("refuses to start without root, saying so", func(ctx SpecContext) {
		// The test binary sits in a directory only root may enter.
		dir, err := os.MkdirTemp("", "labtest-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		Expect(os.Chmod(dir, 0o755)).To(Succeed())
		bin, err := os.ReadFile(os.Args[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "lab.test"), bin, 0o755)).To(Succeed())
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "lab.test"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), childEnv+"=h1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("lab hosts need root"))
	})

	Context("two hosts", Ordered, func() {
		var l *lab.Lab
		BeforeAll(func(ctx SpecContext) {
			var err error
			l, err = lab.Start(ctx, "alpha", "beta")
			Expect(err).NotTo(HaveOccurred())
		})

		It("each has its own hostname, machine id and systemd as PID 1", func(ctx SpecContext) {
			ids := map[string]bool{}
			for _, h := range l.Hosts() {
				res, err := h.Run(ctx, "hostname")
				Expect(err).NotTo(HaveOccurred())
				Expect(strings.TrimSpace(res.Stdout)).To(Equal(h.Name()))
				comm, err := h.Run(ctx, "cat", "/proc/1/comm")
				Expect(err).NotTo(HaveOccurred())
				Expect(strings.TrimSpace(comm.Stdout)).To(Equal("systemd"))
				id, err := os.ReadFile(h.Path("/etc/machine-id"))
				Expect(err).NotTo(HaveOccurred())
				Expect(strings.TrimSpace(string(id))).To(HaveLen(32))
				ids[string(id)] = true
				Expect(h.BootTime()).To(BeNumerically(">", 0))
			}
			Expect(ids).To(HaveLen(2))
			machine, _ := os.Hostname()
			Expect(machine).NotTo(BeElementOf("alpha", "beta"))
		})

		It("keeps the machine's kernel settings and files out of reach", func(ctx SpecContext) {
			h := l.Host("alpha")
			_, err := h.Run(ctx, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")
			Expect(err).To(MatchError(ContainSubstring("Read-only file system")))
			Expect(h.WriteFile("/etc/ccm-lab-probe", []byte("x"), 0o644)).To(Succeed())
			_, err = os.Stat("/etc/ccm-lab-probe")
			Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue(), "a host's write reached the machine")
			_, err = l.Host("beta").Run(ctx, "test", "-e", "/etc/ccm-lab-probe")
			Expect(err).To(HaveOccurred(), "a host's write reached another host")
		})

		It("drives systemd as on a real host: start, stop, enable, a missing unit", func(ctx SpecContext) {
			h := l.Host("beta")
			Expect(h.WriteFile("/etc/systemd/system/labsleep.service", []byte("[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n"), 0o644)).To(Succeed())
			_, err := h.Systemctl(ctx, "daemon-reload")
			Expect(err).NotTo(HaveOccurred())
			_, err = h.Systemctl(ctx, "enable", "--now", "labsleep")
			Expect(err).NotTo(HaveOccurred())
			res, err := h.Systemctl(ctx, "is-active", "labsleep")
			Expect(err).NotTo(HaveOccurred())
			Expect(strings.TrimSpace(res.Stdout)).To(Equal("active"))
			res, _ = h.Systemctl(ctx, "is-enabled", "labsleep")
			Expect(strings.TrimSpace(res.Stdout)).To(Equal("enabled"))
			res, err = h.Systemctl(ctx, "status", "no-such-unit")
			Expect(err).To(HaveOccurred())
			Expect(res.Exit).To(Equal(4))
			_, err = h.Systemctl(ctx, "stop", "labsleep")
			Expect(err).NotTo(HaveOccurred())
		})

		It("leaves no process, cgroup, directory or mount behind when closed", func() {
			var pids []int
			for _, h := range l.Hosts() {
				pids = append(pids, h.PID())
			}
			dir := l.Dir()
			Expect(dir).To(BeADirectory())
			Expect(leftovers(os.Getpid(), dir, "alpha", "beta")).NotTo(BeEmpty(), "the check sees a running lab")
			Expect(l.Close()).To(Succeed())
			for _, pid := range pids {
				Expect(gone(pid)).To(BeTrue(), "pid %d", pid)
			}
			Expect(leftovers(os.Getpid(), dir, "alpha", "beta")).To(BeEmpty())
		})
	})

	It("leaves nothing behind when the process that started it is killed", func(ctx SpecContext) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"=k1,k2")
		out, err := cmd.StdoutPipe()
		Expect(err).NotTo(HaveOccurred())
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		var pids []int
		sc := bufio.NewScanner(out)
		Expect(sc.Scan()).To(BeTrue())
		dir, ok := strings.CutPrefix(sc.Text(), "dir ")
		Expect(ok).To(BeTrue(), "the child printed %q", sc.Text())
		for len(pids) < 2 && sc.Scan() {
			var pid int
			_, err := fmt.Sscanf(sc.Text(), "pid %d", &pid)
			Expect(err).NotTo(HaveOccurred(), "the child printed %q", sc.Text())
			pids = append(pids, pid)
		}
		Expect(pids).To(HaveLen(2))
		Expect(gone(pids[0])).To(BeFalse())
		Expect(leftovers(cmd.Process.Pid, dir, "k1", "k2")).NotTo(BeEmpty(), "the check sees a running lab")

		Expect(cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
		_ = cmd.Wait()
		Eventually(func() []string {
			var left []string
			for _, pid := range pids {
				if !gone(pid) {
					left = append(left, fmt.Sprint("pid ", pid))
				}
			}
			return append(left, leftovers(cmd.Process.Pid, dir, "k1", "k2")...)
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(BeEmpty())
	})
})
