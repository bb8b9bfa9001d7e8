package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/program"

	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/gossrun"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// localInstance names the commands of "ensure" and "apply" runs, so one of
// them cleans up after an earlier one that was killed mid-command.
const localInstance = "local"

// stateInstance names the commands of agents keeping their state in dir:
// "<prefix>-" and a hash of the absolute path.
func stateInstance(prefix, dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sum := sha256.Sum256([]byte(dir))
	return prefix + "-" + hex.EncodeToString(sum[:6])
}

// superviseCommands contains every command this process runs (see package
// runner) and kills what an earlier ccm-agent of the same instance left
// running when it died mid-command. It returns the runner for the providers
// and a function that stops supervising. When this process cannot supervise
// (never expected on Linux) it says so and runs commands with process-group
// containment only.
func superviseCommands(ctx context.Context, log *slog.Logger, instance string) (runner.Exec, func()) {
	sup, err := runner.NewSupervisor(runner.SupervisorOptions{Instance: instance, Log: log})
	if err != nil {
		log.Error("commands run without a supervisor: their escaped processes are not killed", "error", err)
		return runner.Exec{}, func() {}
	}
	if _, err := sup.KillLeftovers(ctx); err != nil {
		log.Warn("could not clean up every process left by an earlier agent", "error", err)
	}
	return runner.Exec{Supervisor: sup}, func() { _ = sup.Close() }
}

// registerPackageLockTimeout adds --package-lock-timeout to cmd.
func (a *app) registerPackageLockTimeout(cmd *fisk.CmdClause) {
	program.DurationVar(cmd.Flag("package-lock-timeout",
		"How long a package install or removal waits for the package manager's lock while another process holds it, e.g. apt's dpkg lock during unattended-upgrades, before it fails naming the holder (default 2m, at most 1h)").
		Envar("CCM_PACKAGE_LOCK_TIMEOUT").PlaceHolder("DURATION"), &a.packageLockTimeout)
}

// localEngine is the engine of a command run on this host: its providers'
// commands, health checks included, run supervised for instance, package
// commands waiting up to lockTimeout for the package manager's lock (zero:
// the provider's default). stop ends the supervision.
func localEngine(ctx context.Context, log *slog.Logger, instance string, lockTimeout time.Duration) (eng *engine.Engine, stop func(), err error) {
	ex, stop := superviseCommands(ctx, log, instance)
	reg, err := providers.Builtin(providers.Options{Runner: ex, Log: log, PackageLockTimeout: lockTimeout})
	if err != nil {
		stop()
		return nil, nil, err
	}
	return engine.New(reg, engine.WithLogger(log), engine.WithHealthRunner(providers.HealthRunner(ex)), engine.WithGossRunner(gossrun.New())), stop, nil
}
