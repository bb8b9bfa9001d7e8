package swaprace

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Nobody is the uid and gid the helper process runs as.
const Nobody = 65534

// sep separates the helper's arguments in envVar.
const sep = "\x1f"

// envVar carries the helper's arguments; its presence makes the test binary
// the helper.
const envVar = "CCM_SWAPRACE_HELPER"

// Race is one running swapper. Make it with Start; call Wait once.
type Race struct {
	// Attacker is the helper's own directory (mode 0755, uid 65534), made
	// inside the shared sticky directory.
	Attacker string
	// Name is the swapped path: a directory or, half the time, a link to
	// the goal. Writes under it are what the test makes.
	Name string
	// Swap is the other half of the pair (Name + ".swap").
	Swap string

	cmd     *exec.Cmd
	done    chan struct{}
	cleanup func()
	// guards the fields below
	mu    sync.Mutex
	iters int
	err   error
}

// SharedDir makes a directory like /tmp (mode 1777, owned by root) in the
// system's temporary directory, where uid 65534 can reach it, and returns
// it with a function removing it and everything below.
func SharedDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "ccm-swaprace-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o1777); err != nil {
		cleanup()
		return "", nil, err
	}
	return dir, cleanup, nil
}

// Start creates, as uid 65534 in sticky (a 1777 directory), the directory
// attacker/ holding name/ (a real directory) and name.swap (a symbolic link
// to goal), then exchanges the two in a loop for at most d or maxIters
// exchanges, whichever comes first. It returns once the pair exists and
// the loop is running.
func Start(sticky, goal string, d time.Duration, maxIters int) (*Race, error) {
	exe, cleanup, err := helperBinary()
	if err != nil {
		return nil, err
	}
	attacker := filepath.Join(sticky, "attacker")
	r := &Race{
		Attacker: attacker,
		Name:     filepath.Join(attacker, "d"),
		Swap:     filepath.Join(attacker, "d.swap"),
		done:     make(chan struct{}),
		cleanup:  cleanup,
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envVar+"="+strings.Join([]string{attacker, goal, d.String(), strconv.Itoa(maxIters)}, sep))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cleanup()
		return nil, err
	}
	r.cmd = cmd
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		cleanup()
		return nil, fmt.Errorf("swap helper did not start: %q", lines.Text())
	}
	go func() {
		defer close(r.done)
		defer cleanup()
		var iters int
		var scanErr error
		if lines.Scan() {
			iters, scanErr = strconv.Atoi(lines.Text())
		} else {
			scanErr = errors.New("swap helper printed no count")
		}
		err := cmd.Wait()
		r.mu.Lock()
		r.iters, r.err = iters, errors.Join(err, scanErr)
		r.mu.Unlock()
	}()
	return r, nil
}

// Done reports whether the helper has stopped.
func (r *Race) Done() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Wait waits for the helper to stop by itself and returns how many
// exchanges it made.
func (r *Race) Wait() (int, error) {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.iters, r.err
}

// RealDir returns which of Name and Swap is the directory now (the helper
// stops at an arbitrary point).
func (r *Race) RealDir() string {
	if fi, err := os.Lstat(r.Name); err == nil && fi.IsDir() {
		return r.Name
	}
	return r.Swap
}

// MaybeRunHelper runs the swap loop and exits when this process was started
// by Start; otherwise it returns at once. Call it first in TestMain.
func MaybeRunHelper() {
	spec, ok := os.LookupEnv(envVar)
	if !ok {
		return
	}
	n, err := runHelper(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "swap helper:", err)
		os.Exit(2)
	}
	fmt.Println(n)
	os.Exit(0)
}

func runHelper(spec string) (int, error) {
	args := strings.Split(spec, sep)
	if len(args) != 4 {
		return 0, fmt.Errorf("bad arguments %q", spec)
	}
	attacker, goal := args[0], args[1]
	d, err := time.ParseDuration(args[2])
	if err != nil {
		return 0, err
	}
	maxIters, err := strconv.Atoi(args[3])
	if err != nil {
		return 0, err
	}
	if os.Geteuid() != Nobody {
		return 0, fmt.Errorf("running as uid %d, not %d", os.Geteuid(), Nobody)
	}
	syscall.Umask(0)
	if err := os.Mkdir(attacker, 0o755); err != nil {
		return 0, err
	}
	name, swap := filepath.Join(attacker, "d"), filepath.Join(attacker, "d.swap")
	if err := os.Mkdir(name, 0o777); err != nil {
		return 0, err
	}
	if err := os.Symlink(goal, swap); err != nil {
		return 0, err
	}
	fmt.Println("ready")
	deadline := time.Now().Add(d)
	n := 0
	for ; n < maxIters && (n%64 != 0 || time.Now().Before(deadline)); n++ {
		if err := unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
			return n, err
		}
	}
	return n, nil
}

// helperBinary copies the test binary to a directory uid 65534 can reach
// (go test builds below a root-only directory) and returns its path and a
// function removing the copy.
func helperBinary() (string, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "ccm-swaprace-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	b, err := os.ReadFile(exe)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "helper"), b, 0o755)
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return filepath.Join(dir, "helper"), cleanup, nil
}
