package systemd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/servicetype"
)

// maxOutput bounds what is kept of a systemctl call's stdout and stderr.
const maxOutput = 64 << 10

// maxMessage bounds how much of systemctl's output goes into an error.
const maxMessage = 512

// Provider manages system services with systemctl. Make one with
// Factory.New; it is safe for concurrent use.
type Provider struct {
	runner runner.Runner
	log    *slog.Logger
	// lock is shared by every provider of one factory and held for the
	// duration of each systemctl call.
	lock *sync.Mutex

	// guards reloaded
	mu       sync.Mutex
	reloaded bool
}

var (
	_ servicetype.Provider     = (*Provider)(nil)
	_ servicetype.StartPending = (*Provider)(nil)
)

// Name returns "systemd".
func (p *Provider) Name() string { return ProviderName }

// Start runs systemctl start --system -- service, or restart when systemd
// is waiting to restart the service after it exited (SubState auto-restart,
// asked with systemctl show): systemd holds a start job for such a unit
// until its RestartSec has passed, however long that is, and restarts it at
// once.
func (p *Provider) Start(ctx context.Context, service string) error {
	if err := p.prepare(ctx, service); err != nil {
		return err
	}
	res, err := p.run(ctx, []string{"show", "--system", "--property=" + subStateProperty, "--", service})
	if err != nil {
		return err
	}
	if res.ExitCode == 0 && strings.TrimSpace(string(res.Stdout)) == subStateProperty+"=auto-restart" {
		resources.Logger(ctx, p.log).Info("service is waiting to be restarted after it exited: restarting it now", "service", service)
		return p.change(ctx, "restart", service)
	}
	return p.change(ctx, "start", service)
}

// subStateProperty is systemd's property for a unit's detailed state.
const subStateProperty = "SubState"

// Stop runs systemctl stop --system -- service.
func (p *Provider) Stop(ctx context.Context, service string) error {
	return p.change(ctx, "stop", service)
}

// Restart runs systemctl restart --system -- service.
func (p *Provider) Restart(ctx context.Context, service string) error {
	return p.change(ctx, "restart", service)
}

// Enable runs systemctl enable --system -- service.
func (p *Provider) Enable(ctx context.Context, service string) error {
	return p.change(ctx, "enable", service)
}

// Disable runs systemctl disable --system -- service.
func (p *Provider) Disable(ctx context.Context, service string) error {
	return p.change(ctx, "disable", service)
}

// Status runs systemctl is-active and is-enabled for service and maps their
// stdout to the service state: Ensure running or stopped, Metadata.Running,
// Metadata.Enabled and Metadata.Masked. It fails with ErrServiceNotFound, ErrInvalidIsActive
// or ErrInvalidIsEnabled when the output says so, or with the runner's error.
func (p *Provider) Status(ctx context.Context, service string) (*protocol.ServiceState, error) {
	if err := servicetype.ValidateName(service); err != nil {
		return nil, fmt.Errorf("systemd: %w", err)
	}
	if err := p.reloadIfChanged(ctx, service); err != nil {
		return nil, err
	}

	res, err := p.unitCommand(ctx, "is-active", service)
	if err != nil {
		return nil, err
	}
	running, err := parseIsActive(res)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", unitCommandLine("is-active", service), err)
	}

	res, err = p.unitCommand(ctx, "is-enabled", service)
	if err != nil {
		return nil, err
	}
	enabled, masked, err := parseIsEnabled(res)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", unitCommandLine("is-enabled", service), err)
	}

	ensure := servicetype.EnsureStopped
	if running {
		ensure = servicetype.EnsureRunning
	}
	return &protocol.ServiceState{
		CommonState: protocol.NewCommonState(protocol.TypeService, service, ensure),
		Metadata: &protocol.ServiceMetadata{
			Name:     service,
			Provider: ProviderName,
			Enabled:  enabled,
			Running:  running,
			Masked:   masked,
		},
	}, nil
}

// StartPending reports whether systemd is bringing service up: systemctl
// is-active --system -- service says "activating" (a start job in progress,
// or a restart pending after the service exited, as a crash-looping unit
// with Restart= is between two tries). Status reports such a service
// stopped, as it is not running yet; the service type stops it when it
// should be stopped, or systemd would start it again.
func (p *Provider) StartPending(ctx context.Context, service string) (bool, error) {
	if err := p.prepare(ctx, service); err != nil {
		return false, err
	}
	res, err := p.unitCommand(ctx, "is-active", service)
	if err != nil {
		return false, err
	}
	if _, err := parseIsActive(res); err != nil {
		return false, fmt.Errorf("%s: %w", unitCommandLine("is-active", service), err)
	}
	return strings.TrimSpace(string(res.Stdout)) == "activating", nil
}

// change runs a systemctl verb that changes the unit and fails when it
// exits non-zero.
func (p *Provider) change(ctx context.Context, verb, service string) error {
	if err := p.prepare(ctx, service); err != nil {
		return err
	}
	resources.Logger(ctx, p.log).Info("running systemctl", "verb", verb, "service", service)
	res, err := p.unitCommand(ctx, verb, service)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return failed(unitCommandLine(verb, service), res)
	}
	return nil
}

// prepare checks the name again (a second line of defence: nothing runs
// for a name the service type would reject) and reloads systemd once.
func (p *Provider) prepare(ctx context.Context, service string) error {
	if err := servicetype.ValidateName(service); err != nil {
		return fmt.Errorf("systemd: %w", err)
	}
	return p.maybeReload(ctx)
}

// maybeReload runs systemctl daemon-reload the first time it is called on
// this provider, so units changed earlier in the run are seen. A failed
// reload is an error and is tried again on the next call.
func (p *Provider) maybeReload(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reloaded {
		return nil
	}
	return p.reload(ctx)
}

// reloadIfChanged is maybeReload, and after the first reload it asks
// systemd whether service's unit files changed on disk since it loaded them
// (systemctl show --property=NeedDaemonReload) and reloads again when they
// did: a file resource later in the same run may have written them after the
// provider's first reload, and systemctl would otherwise start or restart
// the unit as it was (warning that it changed on disk). Status begins every
// apply of a service, so the check is made there.
func (p *Provider) reloadIfChanged(ctx context.Context, service string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reloaded {
		args := []string{"show", "--system", "--property=" + needReloadProperty, "--", service}
		res, err := p.run(ctx, args)
		if err != nil {
			return err
		}
		// A unit systemd cannot show needs no reload; Status then says
		// what is wrong with it.
		if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != needReloadProperty+"=yes" {
			return nil
		}
		resources.Logger(ctx, p.log).Info("unit files changed on disk since systemd loaded them: reloading", "service", service)
	}
	return p.reload(ctx)
}

// needReloadProperty is systemd's property saying a unit's files changed on
// disk since they were loaded.
const needReloadProperty = "NeedDaemonReload"

// reload runs systemctl daemon-reload; p.mu is held.
func (p *Provider) reload(ctx context.Context) error {
	args := []string{"daemon-reload"}
	res, err := p.run(ctx, args)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return failed(commandLine(args), res)
	}
	p.reloaded = true
	return nil
}

// unitCommand runs systemctl verb --system -- service.
func (p *Provider) unitCommand(ctx context.Context, verb, service string) (*runner.Result, error) {
	return p.run(ctx, unitArgs(verb, service))
}

// run runs systemctl with args while holding the shared lock. A non-zero
// exit is a result; an error means systemctl could not be run.
func (p *Provider) run(ctx context.Context, args []string) (*runner.Result, error) {
	p.lock.Lock()
	defer p.lock.Unlock()
	res, err := p.runner.Run(ctx, runner.Command{Path: systemctl, Args: args, MaxOutput: maxOutput})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", commandLine(args), err)
	}
	resources.Logger(ctx, p.log).Debug("ran systemctl", "args", args, "exit", res.ExitCode)
	return res, nil
}

// unitArgs are the arguments for a verb acting on one system unit. The "--"
// ends systemctl's options, so the name is only ever read as a unit name.
func unitArgs(verb, service string) []string {
	return []string{verb, "--system", "--", service}
}

func unitCommandLine(verb, service string) string {
	return commandLine(unitArgs(verb, service))
}

func commandLine(args []string) string {
	return systemctl + " " + strings.Join(args, " ")
}

// failed is the error for a systemctl command that exited non-zero.
func failed(cmdline string, res *runner.Result) error {
	detail := ""
	if stderr := clip(res.Stderr); stderr != "" {
		detail = ": " + stderr
	}
	return fmt.Errorf("%s: %w: exit status %d%s", cmdline, ErrCommandFailed, res.ExitCode, detail)
}

// clip makes command output fit in one bounded line of an error message.
func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > maxMessage {
		s = s[:maxMessage] + "..."
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
