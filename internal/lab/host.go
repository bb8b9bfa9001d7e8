package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sigPowerOff is systemd's "power off now" signal, SIGRTMIN+4 as the C
// library numbers it (SIGRTMIN is 34 there). SIGTERM would make systemd
// re-execute, not stop.
const sigPowerOff = syscall.Signal(34 + 4)

// Host is one lab host.
type Host struct {
	name       string
	pid        int    // systemd's pid, as the machine sees it
	cg         string // the host's cgroup
	started    time.Time
	booted     time.Duration
	supervisor *exec.Cmd
	stop       interface{ Close() error } // closing it ends the host
	done       chan struct{}              // closed when the supervisor exits
	log        lockedBuffer
}

// Result is what a command inside a host did.
type Result struct {
	Stdout, Stderr string
	Exit           int
}

// Name is the host's hostname, and so its agent's identity.
func (h *Host) Name() string { return h.name }

// PID is the host's systemd, as the machine numbers it.
func (h *Host) PID() int { return h.pid }

// BootTime is how long the host took from its start to systemd reporting
// the system running.
func (h *Host) BootTime() time.Duration { return h.booted }

// Path is where the host's file p is, seen from the machine (through
// /proc/PID/root): the host's files can be read and written there.
func (h *Host) Path(p string) string {
	return filepath.Join("/proc", strconv.Itoa(h.pid), "root", p)
}

// Run runs argv inside the host (its namespaces, root and cgroup), as root,
// with a plain environment. A command that exits non-zero returns its
// Result and an error wrapping ErrCommand that quotes its standard error.
func (h *Host) Run(ctx context.Context, argv ...string) (Result, error) {
	if len(argv) == 0 {
		return Result{}, fmt.Errorf("%w: %s: no command", ErrCommand, h.name)
	}
	args := append([]string{"-t", strconv.Itoa(h.pid), "-m", "-u", "-i", "-p", "-C", "-r", "-w", "--"}, argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive"}
	cmd.Dir = "/"
	// Start it in the host's cgroup, so closing the host ends it too.
	if cgfd, err := os.Open(h.cg); err == nil {
		defer cgfd.Close()
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cgfd.Fd())}
	}
	return run(cmd, h.name+": "+strings.Join(argv, " "))
}

// run runs cmd, collecting its output. A command that cannot start, or
// exits non-zero, returns an error wrapping ErrCommand that says what ran
// (what) and quotes the end of its standard error.
func run(cmd *exec.Cmd, what string) (Result, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &exit):
		res.Exit = exit.ExitCode()
		msg := strings.TrimSpace(res.Stderr)
		if len(msg) > 2048 {
			msg = msg[len(msg)-2048:]
		}
		return res, fmt.Errorf("%w: %s exited %d: %s", ErrCommand, what, res.Exit, msg)
	default:
		return res, fmt.Errorf("%w: %s: %v", ErrCommand, what, err)
	}
}

// Systemctl runs systemctl inside the host.
func (h *Host) Systemctl(ctx context.Context, args ...string) (Result, error) {
	return h.Run(ctx, append([]string{"systemctl", "--no-pager"}, args...)...)
}

// WriteFile writes a file inside the host, creating its directories.
func (h *Host) WriteFile(p string, data []byte, mode os.FileMode) error {
	full := h.Path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCommand, h.name, err)
	}
	if err := os.WriteFile(full, data, mode); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCommand, h.name, err)
	}
	return os.Chmod(full, mode)
}

// waitRunning waits (bounded by BootTimeout and ctx) for systemd to report
// the system running. A degraded system is an error naming the failed
// units.
func (h *Host) waitRunning(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, BootTimeout)
	defer cancel()
	var last string
	for {
		select {
		case <-h.done:
			return fmt.Errorf("%w: %s exited while booting: %s", ErrBoot, h.name, h.log.String())
		default:
		}
		res, err := h.Systemctl(ctx, "is-system-running")
		if os.Getenv("LAB_DEBUG") != "" {
			fmt.Fprintln(os.Stderr, "DEBUG", res, err)
		}
		last = strings.TrimSpace(res.Stdout)
		switch last {
		case "running":
			h.booted = time.Since(h.started)
			return nil
		case "degraded":
			failed, _ := h.Systemctl(ctx, "--failed", "--no-legend", "--plain")
			return fmt.Errorf("%w: %s is degraded: %s", ErrBoot, h.name, strings.TrimSpace(failed.Stdout))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: not running after %s (systemd says %q): %v", ErrBoot, h.name, time.Since(h.started).Round(time.Millisecond), last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close powers the host off (systemd stops its units, bounded), then ends
// its supervisor, which kills whatever is left in its cgroup and removes it.
func (h *Host) Close() error {
	if h.pid > 0 {
		_ = syscall.Kill(h.pid, sigPowerOff)
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && alive(h.pid); {
			time.Sleep(50 * time.Millisecond)
		}
	}
	h.stop.Close()
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		_ = h.supervisor.Process.Kill()
		<-h.done
	}
	if _, err := os.Stat(h.cg); err == nil {
		return fmt.Errorf("lab: %s: its cgroup %s is still there: %s", h.name, h.cg, h.log.String())
	}
	return nil
}

// InstallDeb installs a .deb inside the host with dpkg -i. It takes no lock
// on the machine: the host's package state is its own copy from boot (see
// Start), so dpkg on the machine and in the host never see each other's.
func (h *Host) InstallDeb(ctx context.Context, deb string) error {
	in := "/var/cache/ccm-lab/" + filepath.Base(deb)
	data, err := os.ReadFile(deb)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if err := h.WriteFile(in, data, 0o644); err != nil {
		return err
	}
	_, err = h.Run(ctx, "dpkg", "-i", in)
	return err
}

// AgentSetup is how StartAgent configures the host's ccm-agent.
type AgentSetup struct {
	Server string            // the broker's URL (CCM_SERVER)
	Policy string            // /etc/ccm/policy.yaml
	Facts  map[string]string // custom facts in /etc/ccm/agent.yaml
}

// StartAgent configures the installed ccm-agent (agent.yaml with the custom
// facts, the policy, /etc/default/ccm-agent naming the server) and enables
// and starts its unit, as an operator would, then waits for it to be active.
func (h *Host) StartAgent(ctx context.Context, s AgentSetup) error {
	var cfg strings.Builder
	cfg.WriteString("policy: /etc/ccm/policy.yaml\n")
	if len(s.Facts) > 0 {
		keys := make([]string, 0, len(s.Facts))
		for k := range s.Facts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		cfg.WriteString("facts:\n")
		for _, k := range keys {
			fmt.Fprintf(&cfg, "  %s: %q\n", k, s.Facts[k])
		}
	}
	for p, body := range map[string]string{
		"/etc/ccm/agent.yaml":    cfg.String(),
		"/etc/ccm/policy.yaml":   s.Policy,
		"/etc/default/ccm-agent": "CCM_SERVER=" + s.Server + "\n",
	} {
		if err := h.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	if _, err := h.Systemctl(ctx, "enable", "--now", "ccm-agent"); err != nil {
		return err
	}
	if _, err := h.Systemctl(ctx, "is-active", "ccm-agent"); err != nil {
		logs, _ := h.Run(ctx, "journalctl", "-u", "ccm-agent", "--no-pager", "-n", "30")
		return fmt.Errorf("%w; its journal: %s", err, logs.Stdout)
	}
	return nil
}
