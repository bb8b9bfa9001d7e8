package archivetype

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Provider is implemented by archive providers.
type Provider interface {
	resources.Provider
	// Download fetches props.URL to props.Name atomically, owned by
	// props.Owner and props.Group, verifying props.Checksum when set. Nothing
	// is left at props.Name or beside it when it fails. It honours ctx.
	Download(ctx context.Context, props *Properties) error
	// Extract unpacks the archive at props.Name into props.ExtractParent,
	// creating that directory when missing. It honours ctx.
	Extract(ctx context.Context, props *Properties) error
	// Status reports the archive file (existence, checksum, owner, group,
	// size, mtime) and whether props.Creates exists. Ensure is present when
	// the archive file exists and absent otherwise.
	Status(ctx context.Context, props *Properties) (*protocol.ArchiveState, error)
	// Remove deletes the archive file at props.Name without following a
	// link on the way to it; a missing file is not an error and a
	// directory is never removed.
	Remove(ctx context.Context, props *Properties) error
}

// Type is the archive resource type.
type Type struct{}

var _ resources.Type = Type{}

// Name returns "archive".
func (Type) Name() string { return protocol.TypeArchive }

// DefaultEnsure returns "present".
func (Type) DefaultEnsure() string { return EnsurePresent }

// NewProperties returns empty archive properties.
func (Type) NewProperties() resources.Properties { return &Properties{} }

// Apply brings the archive to its desired state: it queries Status, stops
// when the state checks pass, otherwise removes, downloads, extracts and
// cleans up as decided (under noop it only reports which, one message per
// step: MsgRemove, MsgDownload, MsgExtract, MsgCleanup), then queries Status again and fails with
// resources.ErrDesiredStateFailed when the checks still do not pass.
func (t Type) Apply(ctx context.Context, ac *resources.ApplyContext, props resources.Properties, p resources.Provider) (*resources.Outcome, error) {
	prop, ok := props.(*Properties)
	if !ok {
		return nil, fmt.Errorf("archive: properties are %T, not *archivetype.Properties", props)
	}
	prov, ok := p.(Provider)
	if !ok {
		name := "<nil>"
		if p != nil {
			name = p.Name()
		}
		return nil, fmt.Errorf("archive %s: %w: %s (%T)", prop.Name, ErrWrongProvider, name, p)
	}
	log := slog.New(slog.DiscardHandler)
	if ac != nil && ac.Log != nil {
		log = ac.Log
	}
	noop := ac != nil && ac.Noop

	initial, err := status(ctx, prov, prop)
	if err != nil {
		return nil, err
	}
	if ok, _ := desired(prop, initial.Metadata); ok {
		initial.Stable = true
		return &resources.Outcome{State: initial}, nil
	}
	pl := decide(prop, initial.Metadata)
	diff := diffFor(prop, initial.Metadata, pl)
	if noop {
		return &resources.Outcome{State: initial, Changed: pl.changes(), NoopMessage: pl.noopMessage(), Diff: diff}, nil
	}

	changed, err := act(ctx, log, prov, prop, pl)
	if err != nil {
		out := &resources.Outcome{State: initial, Changed: changed}
		if st, serr := status(ctx, prov, prop); serr == nil {
			out.State = st
		}
		return out, err
	}

	final, err := status(ctx, prov, prop)
	if err != nil {
		return &resources.Outcome{State: initial, Changed: changed}, err
	}
	out := &resources.Outcome{State: final, Changed: changed, Diff: diff}
	if ok, why := desired(prop, final.Metadata); !ok {
		return out, fmt.Errorf("archive %s: %w: %s", prop.Name, resources.ErrDesiredStateFailed, why)
	}
	final.Stable = true
	return out, nil
}

// act carries out the plan and reports whether anything was changed.
func act(ctx context.Context, log *slog.Logger, prov Provider, p *Properties, pl plan) (bool, error) {
	changed := false
	if pl.remove {
		log.Info("removing archive", "name", p.Name)
		if err := prov.Remove(ctx, p); err != nil {
			return changed, fmt.Errorf("archive %s: remove: %w", p.Name, err)
		}
		changed = true
	}
	if pl.download {
		log.Info("downloading archive", "name", p.Name, "url", RedactURL(p.URL))
		if err := prov.Download(ctx, p); err != nil {
			return changed, fmt.Errorf("archive %s: download: %w", p.Name, err)
		}
		changed = true
	}
	if pl.extract {
		log.Info("extracting archive", "name", p.Name, "extract_parent", p.ExtractParent)
		changed = true
		if err := prov.Extract(ctx, p); err != nil {
			return changed, fmt.Errorf("archive %s: extract: %w", p.Name, err)
		}
	}
	if pl.cleanup {
		log.Info("cleaning up archive", "name", p.Name)
		if err := prov.Remove(ctx, p); err != nil {
			return changed, fmt.Errorf("archive %s: remove: %w", p.Name, err)
		}
		changed = true
	}
	return changed, nil
}

// status calls the provider and checks its answer is usable.
func status(ctx context.Context, prov Provider, p *Properties) (*protocol.ArchiveState, error) {
	st, err := prov.Status(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("archive %s: status: %w", p.Name, err)
	}
	if st == nil || st.Metadata == nil {
		return nil, fmt.Errorf("archive %s: status: provider %s returned no metadata", p.Name, prov.Name())
	}
	return st, nil
}
