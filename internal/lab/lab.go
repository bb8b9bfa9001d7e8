package lab

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	// ErrUnsupported: this machine cannot run a lab (not root, no cgroup2,
	// no systemd, a tool missing). The error says what is missing.
	ErrUnsupported = errors.New("lab hosts cannot run on this machine")
	// ErrBoot: a host did not come up.
	ErrBoot = errors.New("lab host did not boot")
	// ErrCommand: a command inside a host could not be run or failed.
	ErrCommand = errors.New("lab host command failed")
)

//go:embed boot.sh
var bootScript []byte

//go:embed supervise.sh
var superviseScript []byte

// BootTimeout bounds one host's boot, from its start to systemd reporting
// the system running.
const BootTimeout = 60 * time.Second

// hostName is what a host may be called: a DNS label, as hostname takes.
var hostName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Lab is a set of running hosts. Close it.
type Lab struct {
	dir   string // scratch: the scripts, the package state's copy and one empty directory per host
	cg    string // this lab's cgroup
	hosts []*Host
}

// Check reports what this machine lacks to run lab hosts, wrapping
// ErrUnsupported, or nil when it has all of it.
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: lab hosts need root (namespaces, mounts, cgroups); run as root", ErrUnsupported)
	}
	for _, tool := range []string{"unshare", "nsenter", "mount", "pivot_root", "/lib/systemd/systemd", "systemctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s is missing (Debian: apt-get install systemd util-linux mount)", ErrUnsupported, tool)
		}
	}
	if _, err := cgroup2Mount(); err != nil {
		return err
	}
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil || !strings.Contains(string(b), "overlay") {
		return fmt.Errorf("%w: the kernel has no overlay file system (modprobe overlay)", ErrUnsupported)
	}
	return nil
}

// Start boots one host per name, all at once, and returns when every one
// reports its system running. On an error nothing is left running.
//
// First it copies the machine's package state (/var/lib/dpkg and
// /var/lib/apt) once, holding apttest.LockHost (as long as ctx allows) and
// dpkg's and apt's own locks (each for at most StateLockTimeout; a lock
// held longer fails Start with an error naming its holder, booting
// nothing). Each host starts from that copy: a package installed or
// removed on the machine later is not seen in the host, nor the host's on
// the machine.
func Start(ctx context.Context, names ...string) (*Lab, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("lab: no host names given")
	}
	seen := map[string]bool{}
	for _, n := range names {
		if !hostName.MatchString(n) {
			return nil, fmt.Errorf("lab: host name %q is not a DNS label (lower case letters, digits and hyphens, at most 63)", n)
		}
		if seen[n] {
			return nil, fmt.Errorf("lab: host name %q given twice", n)
		}
		seen[n] = true
	}
	mnt, _ := cgroup2Mount()
	base := filepath.Join(mnt, cgroupDir)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("%w: creating %s: %v", ErrUnsupported, base, err)
	}
	sweep(base)

	dir, err := os.MkdirTemp("", "ccm-lab-")
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l := &Lab{dir: dir, cg: filepath.Join(base, fmt.Sprintf("%d-%s", os.Getpid(), filepath.Base(dir)[len("ccm-lab-"):]))}
	for name, body := range map[string][]byte{"boot.sh": bootScript, "supervise.sh": superviseScript} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("lab: %w", err)
		}
	}
	// Every host starts from one copy of the machine's package state,
	// taken before any boots.
	if err := snapshotPackageState(ctx, filepath.Join(dir, "pkgstate.tar")); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Mkdir(l.cg, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("lab: creating cgroup %s: %w", l.cg, err)
	}

	for _, n := range names {
		h, err := l.spawn(n)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.hosts = append(l.hosts, h)
	}
	errs := make([]error, len(l.hosts))
	var wg sync.WaitGroup
	for i, h := range l.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.waitRunning(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// spawn starts a host's supervisor and learns systemd's pid (as the
// machine sees it).
func (l *Lab) spawn(name string) (*Host, error) {
	cg := filepath.Join(l.cg, name)
	scratch := filepath.Join(l.dir, name)
	if err := os.Mkdir(cg, 0o755); err != nil {
		return nil, fmt.Errorf("lab: creating cgroup %s: %w", cg, err)
	}
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	h := &Host{name: name, cg: cg, started: time.Now()}
	cmd := exec.Command("/bin/bash", filepath.Join(l.dir, "supervise.sh"), cg, name, scratch, filepath.Join(l.dir, "boot.sh"), filepath.Join(l.dir, "pkgstate.tar"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	cmd.Stderr = &h.log
	// Its own process group: a Ctrl-C to `make lab` reaches the lab's
	// owner, which closes the lab in order, not the supervisors first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("lab: starting %s's supervisor: %w", name, err)
	}
	h.supervisor, h.stop = cmd, stdin
	h.done = make(chan struct{})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var unshare int
	if _, scanErr := fmt.Sscanf(line, "unshare %d", &unshare); err != nil || scanErr != nil {
		stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%w: %s: supervisor printed %q: %v", ErrBoot, name, line, h.log.String())
	}
	go func() { _ = cmd.Wait(); close(h.done) }()
	// unshare forks the host's PID 1; wait (bounded) for that child.
	children := fmt.Sprintf("/proc/%d/task/%d/children", unshare, unshare)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(children)
		if f := strings.Fields(string(b)); len(f) > 0 {
			h.pid, _ = strconv.Atoi(f[0])
			return h, nil
		}
	}
	h.Close()
	return nil, fmt.Errorf("%w: %s: unshare started no child: %s", ErrBoot, name, h.log.String())
}

// Dir is the lab's scratch directory on the machine (the hosts' scripts and
// an empty directory per host, where its root is mounted in its namespace).
func (l *Lab) Dir() string { return l.dir }

// Hosts returns the lab's hosts in the order they were named.
func (l *Lab) Hosts() []*Host { return l.hosts }

// Host returns the host called name, or nil.
func (l *Lab) Host(name string) *Host {
	for _, h := range l.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

// Close powers every host off (bounded), then has each supervisor remove
// what is left, and removes the lab's scratch directory and cgroup.
func (l *Lab) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(l.hosts))
	for i, h := range l.hosts {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = h.Close() }()
	}
	wg.Wait()
	if err := removeCgroup(l.cg); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(l.dir); err != nil {
		errs = append(errs, fmt.Errorf("lab: %w", err))
	}
	return errors.Join(errs...)
}

// lockedBuffer collects a supervisor's standard error.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) < 64<<10 {
		b.buf = append(b.buf, p...)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.buf))
}

var _ io.Writer = (*lockedBuffer)(nil)
