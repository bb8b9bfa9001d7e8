package filetype

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Type is the file resource type.
type Type struct{}

var _ resources.Type = Type{}

// Name returns "file".
func (Type) Name() string { return protocol.TypeFile }

// DefaultEnsure returns "present".
func (Type) DefaultEnsure() string { return EnsurePresent }

// NewProperties returns empty file properties.
func (Type) NewProperties() resources.Properties { return &Properties{} }

// Apply brings the file to its desired state: it asks the provider for the
// current state, decides (ensure, content, owner, group, mode), acts unless
// ac.Noop, then checks the state again and fails with an error wrapping
// resources.ErrDesiredStateFailed when it was not reached. Under noop nothing
// is changed and the outcome carries the noop message of the action. A
// provider that is a Binder holds what it needs for the path during the
// apply, so the status, the write and the status after it share it (the
// posix provider: one handle on the parent directory).
func (Type) Apply(ctx context.Context, ac *resources.ApplyContext, props resources.Properties, p resources.Provider) (*resources.Outcome, error) {
	if ac == nil {
		ac = &resources.ApplyContext{}
	}
	fprops, ok := props.(*Properties)
	if !ok || fprops == nil {
		return nil, fmt.Errorf("file: properties are %T, not *filetype.Properties", props)
	}
	name := fprops.Name
	fp, ok := p.(Provider)
	if !ok {
		return nil, fmt.Errorf("file %s: provider %T does not implement filetype.Provider", name, p)
	}
	if err := fprops.Validate(); err != nil {
		return nil, fmt.Errorf("file %s: %w", name, err)
	}
	log := ac.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("file", name, "provider", fp.Name())

	want, content, source, err := resolveDesired(ctx, ac, fp, fprops)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", name, err)
	}
	ctx, release := bind(ctx, fp, name)
	defer release()
	cur, err := fp.Status(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", name, err)
	}
	pl, err := decide(want, cur)
	if err != nil {
		return &resources.Outcome{State: cur}, fmt.Errorf("file %s: %w", name, err)
	}
	if pl.action == actionNone {
		return &resources.Outcome{State: cur}, nil
	}
	diff := diffFor(ctx, ac, fp, fprops, want, cur, pl, content, source)
	if ac.Noop {
		msg := pl.noopMessage()
		log.Info("noop: file would change", "action", pl.action.String(), "message", msg)
		return &resources.Outcome{State: cur, Changed: true, NoopMessage: msg, Diff: diff}, nil
	}

	if len(pl.diffs) > 0 {
		log = log.With("differs", strings.Join(pl.diffs, ", "))
	}
	log.Info("changing file", "action", pl.action.String())
	if err := act(ctx, fp, fprops, pl, want.mode, content, source); err != nil {
		return &resources.Outcome{State: cur}, fmt.Errorf("file %s: %w", name, err)
	}
	after, err := fp.Status(ctx, name)
	if err != nil {
		return &resources.Outcome{State: cur, Changed: true}, fmt.Errorf("file %s: after %s: %w", name, pl.action, err)
	}
	if diffs := unmet(want, after); len(diffs) > 0 {
		return &resources.Outcome{State: after, Changed: true, Diff: diff}, fmt.Errorf("file %s: %w: %s", name, resources.ErrDesiredStateFailed, strings.Join(diffs, ", "))
	}
	return &resources.Outcome{State: after, Changed: true, Diff: diff}, nil
}

// bind returns the context for one apply of name through fp: the one
// fp's Bind returns when it is a Binder (see Binder), else ctx; release is
// called when the apply is done.
func bind(ctx context.Context, fp Provider, name string) (context.Context, func()) {
	if b, ok := fp.(Binder); ok {
		return b.Bind(ctx, name)
	}
	return ctx, func() {}
}

// act performs the plan through the provider.
// mode is the desired mode (for a directory, with its search bits).
func act(ctx context.Context, fp Provider, props *Properties, pl plan, mode string, content []byte, source string) error {
	if pl.replace {
		if err := fp.Remove(ctx, props.Name, props.Force); err != nil {
			return err
		}
	}
	switch pl.action {
	case actionRemove:
		return fp.Remove(ctx, props.Name, props.Force)
	case actionCreateDirectory:
		return fp.CreateDirectory(ctx, props.Name, props.Owner, props.Group, mode)
	case actionStore:
		return fp.Store(ctx, props.Name, content, source, props.Owner, props.Group, mode)
	case actionSetAttributes:
		return fp.SetAttributes(ctx, props.Name, props.Owner, props.Group, mode)
	}
	return nil
}

// resolveDesired works out the desired state, the content to store and the
// resolved source path, hashing the content or source when it is managed.
func resolveDesired(ctx context.Context, ac *resources.ApplyContext, fp Provider, props *Properties) (desired, []byte, string, error) {
	want := desired{
		ensure: props.Ensure,
		owner:  props.Owner,
		group:  props.Group,
		mode:   string(props.Mode),
		force:  props.Force,
	}
	if props.Ensure == EnsureDirectory {
		want.mode = DirectoryMode(want.mode)
	}
	if props.Ensure != EnsurePresent {
		return want, nil, "", nil
	}
	switch {
	case props.Content != nil:
		content := []byte(*props.Content)
		want.manageContent, want.checksum = true, ChecksumBytes(content)
		return want, content, "", nil
	case props.Source != "":
		source, err := SourcePath(props.Source, ac.WorkingDir)
		if err != nil {
			return want, nil, "", err
		}
		sum, err := checksumSource(ctx, fp, source)
		if err != nil {
			return want, nil, "", fmt.Errorf("property source: %w", err)
		}
		want.manageContent, want.checksum = true, sum
		return want, nil, source, nil
	}
	return want, nil, "", nil
}

// SourcePath resolves the source property: an absolute path is used as is, a
// relative one is joined to workingDir. A relative source with no working
// directory wraps resources.ErrInvalid.
func SourcePath(source, workingDir string) (string, error) {
	if filepath.IsAbs(source) {
		return filepath.Clean(source), nil
	}
	if workingDir == "" {
		return "", resources.InvalidField("source", "%q is a relative path and there is no working directory to resolve it against", source)
	}
	return filepath.Join(workingDir, source), nil
}

// openSource opens the source the way fp's Store will read it when fp is a
// SourceOpener, else by path.
func openSource(ctx context.Context, fp Provider, source string) (*os.File, error) {
	if so, ok := fp.(SourceOpener); ok {
		return so.OpenSource(ctx, source)
	}
	return os.Open(source)
}

// checksumSource is the hex SHA-256 of the regular file source, opened by
// openSource.
func checksumSource(ctx context.Context, fp Provider, source string) (string, error) {
	f, err := openSource(ctx, fp, source)
	if err != nil {
		return "", err
	}
	return checksumRegular(ctx, source, f)
}
