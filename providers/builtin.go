package providers

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ccm-fleet/ccm/providers/apt"
	"github.com/ccm-fleet/ccm/providers/archivehttp"
	"github.com/ccm-fleet/ccm/providers/dnf"
	"github.com/ccm-fleet/ccm/providers/execposix"
	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/providers/shadow"
	"github.com/ccm-fleet/ccm/providers/systemd"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/applytype"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

// Options are what the built-in providers need.
type Options struct {
	// Runner starts external commands; runner.Exec{} for real use.
	Runner runner.Runner
	// Log receives provider messages; nil discards.
	Log *slog.Logger
	// PackageLockTimeout is how long apt-get waits for the dpkg lock
	// another process holds; zero is apt.DefaultLockTimeout.
	PackageLockTimeout time.Duration
}

// Builtin returns a registry holding every resource type and provider of
// CCM Fleet. This is the only place they are wired together.
func Builtin(opts Options) (*resources.Registry, error) {
	if opts.Runner == nil {
		opts.Runner = runner.Exec{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	log := opts.Log
	reg := resources.NewRegistry()

	// One lock serialises every package manager command of this registry.
	packageLock := &sync.Mutex{}
	// One lock serialises every change to the account files.
	accountLock := &sync.Mutex{}

	// The types are the resource catalog's; the providers are wired here.
	types := catalog.Types()
	factories := []resources.Factory{
		applytype.Factory{},
		archivehttp.NewFactory(log),
		execposix.NewPosixFactory(opts.Runner, log),
		execposix.NewShellFactory(opts.Runner, log),
		fileposix.NewFactory(log),
		apt.NewFactory(opts.Runner, log, packageLock, apt.WithLockTimeout(opts.PackageLockTimeout)),
		dnf.NewFactory(opts.Runner, log, packageLock),
		scaffoldchoria.NewFactory(log),
		systemd.NewFactory(opts.Runner, log),
		shadow.NewUserFactory(opts.Runner, log, accountLock),
		shadow.NewGroupFactory(opts.Runner, log, accountLock),
	}

	for _, t := range types {
		if err := reg.RegisterType(t); err != nil {
			return nil, fmt.Errorf("builtin registry: %w", err)
		}
	}
	for _, f := range factories {
		if err := reg.RegisterProvider(f); err != nil {
			return nil, fmt.Errorf("builtin registry: %w", err)
		}
	}
	return reg, nil
}
