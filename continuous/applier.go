package continuous

import (
	"context"
	"log/slog"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// ApplyOptions say how one manifest run goes.
type ApplyOptions struct {
	// MonitorOnly runs only the resources' health checks.
	MonitorOnly bool
	// Facts and Data are what templates see (Data is merged over the
	// manifest's own).
	Facts, Data map[string]any
	// Guard, when set, is asked about every resource as it will run,
	// before the first is applied; a refusal applies nothing.
	Guard func(p *engine.Prepared) error
	// Prepared, when set, is given every resource the run prepared.
	Prepared func(p *engine.Prepared)
	// TemplateOptions expose more to the manifest's templates (the
	// registrations() lookup).
	TemplateOptions []templates.Option
	// Source names the manifest's source in logs.
	Source string
	// Trigger says why it runs: TriggerStart, TriggerChange,
	// TriggerSchedule, TriggerRemediation or TriggerHealth.
	Trigger string
	// Version is the SHA-256 of what runs: the remote bundle, or a local
	// manifest's document. An applier that journals runs keys them by
	// Source and Version (a new version is a new manifest).
	Version string
	// Signer names who signed the bundle that runs (the policy's name for
	// the key, and the key), as the bundle's own audit line does; empty
	// for a local manifest or a bundle vouched for by a pinned checksum.
	// An applier that audits its runs names it.
	Signer AuditSigner
}

// Why a manifest runs.
const (
	// TriggerStart: the agent started.
	TriggerStart = "start"
	// TriggerChange: a remote source changed, or a failed apply is tried
	// again.
	TriggerChange = "change"
	// TriggerSchedule: the interval passed.
	TriggerSchedule = "schedule"
	// TriggerRemediation: a health check was CRITICAL.
	TriggerRemediation = "remediation"
	// TriggerHealth: a health-check-only run.
	TriggerHealth = "health"
)

// Applier runs one manifest. Apply returns the run's report; the error is
// non-nil only when the manifest could not run at all (a guard refusal,
// invalid data or templates), resource failures are in the report.
type Applier interface {
	Apply(ctx context.Context, m *manifest.Manifest, opts ApplyOptions) (*manifest.Report, error)
}

// LocalApplier runs manifests on this host through Engine.
type LocalApplier struct {
	Engine *engine.Engine
	Log    *slog.Logger
}

var _ Applier = (*LocalApplier)(nil)

// Apply runs m through the engine.
func (l *LocalApplier) Apply(ctx context.Context, m *manifest.Manifest, opts ApplyOptions) (*manifest.Report, error) {
	log := l.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return manifest.Run(ctx, l.Engine, m, manifest.RunOptions{
		MonitorOnly:     opts.MonitorOnly,
		Facts:           opts.Facts,
		Data:            opts.Data,
		Guard:           opts.Guard,
		Prepared:        opts.Prepared,
		TemplateOptions: opts.TemplateOptions,
		Log:             log.With("manifest", opts.Source),
	})
}
