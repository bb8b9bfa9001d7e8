package apt_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// holdLockEnv names the file a re-executed test binary locks (TestMain).
const holdLockEnv = "CCM_APT_TEST_HOLD_LOCK"

// holdLock takes an fcntl write lock on the whole of path, as dpkg and apt
// do (waiting while another process holds it), says "locked" on stdout and
// holds the lock until stdin closes.
func holdLock(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLKW, &lk); err != nil {
		fmt.Fprintf(os.Stderr, "lock %s: %v\n", path, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// lockHolderExit bounds the wait for a released holder to exit: a bound,
// not a speed check.
const lockHolderExit = time.Minute

// lockHolder is another process holding an fcntl write lock on a file.
type lockHolder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// holdLockInChild starts this test binary again to lock path and returns
// once it holds the lock. The lock is released by Release, and at the end
// of the spec at the latest.
func holdLockInChild(path string) *lockHolder {
	GinkgoHelper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdLockEnv+"="+path)
	cmd.Stderr = GinkgoWriter
	stdin, err := cmd.StdinPipe()
	Expect(err).NotTo(HaveOccurred())
	stdout, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(cmd.Start()).To(Succeed())
	h := &lockHolder{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	DeferCleanup(h.Release)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() { h.done <- cmd.Wait() }()
	Expect(err).NotTo(HaveOccurred(), "the lock holder exited before it held %s", path)
	Expect(line).To(Equal("locked\n"))
	return h
}

// PID is the holder's process id.
func (h *lockHolder) PID() int { return h.cmd.Process.Pid }

// Command is the holder's name as the kernel reports it (/proc/PID/comm:
// the executable's base name, at most 15 bytes).
func (h *lockHolder) Command() string {
	name := filepath.Base(os.Args[0])
	return name[:min(len(name), 15)]
}

// Holds names the holder as the provider's errors do.
func (h *lockHolder) Holds() string {
	return fmt.Sprintf("process %d (%s)", h.PID(), h.Command())
}

// Release closes the holder's stdin, so it exits and its lock goes, and
// waits for it to exit. It may be called more than once.
func (h *lockHolder) Release() {
	if h.stdin == nil {
		return
	}
	_ = h.stdin.Close()
	h.stdin = nil
	Eventually(h.done).WithTimeout(lockHolderExit).Should(Receive(BeNil()), "the lock holder exits once released")
}
