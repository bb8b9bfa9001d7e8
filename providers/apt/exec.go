package apt

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// SearchPath is where the provider finds dpkg-query, apt-cache and apt-get,
// and the PATH they run with (dpkg needs the sbin directories).
const SearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env returns the environment added to every command the provider runs, so
// that neither dpkg nor apt-listbugs nor apt-listchanges ever prompts.
func Env() []string {
	return []string{
		"DEBIAN_FRONTEND=noninteractive",
		"APT_LISTBUGS_FRONTEND=none",
		"APT_LISTCHANGES_FRONTEND=none",
	}
}

// maxTail bounds how much of a failed command's output goes into an error.
const maxTail = 1024

// runLocked runs one command; the caller holds p.lock for any command that
// may change or lock the package database (apt-cache policy, which only
// reads, may run without it). A non-zero exit is returned as a result, not
// an error.
func (p *Provider) runLocked(ctx context.Context, extraEnv []string, name string, args ...string) (*runner.Result, error) {
	cmd := runner.Command{Path: name, Args: args, Env: append(Env(), extraEnv...), SearchPath: SearchPath}
	resources.Logger(ctx, p.log).Debug("running package command", "command", cmd.String())
	res, err := p.runner.Run(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("%s: %w: no result", name, pkgtype.ErrUnexpectedOutput)
	}
	return res, nil
}

// failed describes a command that exited non-zero, with the end of what it
// printed (stderr, or stdout when stderr is empty).
func failed(res *runner.Result, name string, args ...string) error {
	return fmt.Errorf("%w: %s exited with status %d: %s", pkgtype.ErrCommandFailed,
		strings.Join(append([]string{name}, args...), " "), res.ExitCode, res.Tail(maxTail))
}

// aptGet runs apt-get with args for pkg, the caller holding p.lock. apt-get
// waits up to the provider's lock timeout (never past ctx's deadline) for
// the dpkg lock: -o DPkg::Lock::Timeout=N comes first. When another process
// holds the lock as it starts, the wait is logged with the holder; when
// apt-get gives up on the lock, the error is a *LockedError naming it.
func (p *Provider) aptGet(ctx context.Context, pkg string, args []string) error {
	log := resources.Logger(ctx, p.log)
	secs := lockSeconds(ctx, p.lockTimeout)
	wait := time.Duration(secs) * time.Second
	args = append([]string{"-o", "DPkg::Lock::Timeout=" + strconv.Itoa(secs)}, args...)
	var before *holder
	if h, ok := findHolder(p.lockPaths); ok {
		before = &h
		log.Info("waiting for the dpkg lock", "package", pkg, "lock", h.lock, "holder", h.String(), "pid", h.pid, "timeout", wait)
	}
	// The C locale: what apt prints about a lock is read below, in the
	// words of its untranslated messages.
	res, err := p.runLocked(ctx, []string{"LC_ALL=C"}, "apt-get", args...)
	if err != nil {
		if before != nil {
			return fmt.Errorf("package %s: waiting for the dpkg lock %s held by %s: %w", pkg, before.lock, before, err)
		}
		return err
	}
	if res.ExitCode == 0 {
		if before == nil && waitingRE.Match(res.Stdout) {
			h, _ := lastHolder(res.Stdout)
			log.Info("apt-get waited for the dpkg lock", "package", pkg, "lock", h.lock, "holder", h.String(), "pid", h.pid)
		}
		return nil
	}
	cmdErr := failed(res, "apt-get", args...)
	if h, ok := lockFailure(res, before, p.lockPaths); ok {
		return &LockedError{Package: pkg, Lock: h.lock, PID: h.pid, Command: h.command, Waited: wait, Err: cmdErr}
	}
	return cmdErr
}
