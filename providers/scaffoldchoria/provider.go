package scaffoldchoria

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/choria-io/scaffold"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// Provider renders scaffolds with the choria-io/scaffold library. It holds
// no per-call state and is safe for concurrent use on different targets.
type Provider struct {
	log *slog.Logger
	// timeoutBin is coreutils timeout(1), used to bound post commands; ""
	// when it is not installed.
	timeoutBin string
}

var _ scaffoldtype.Provider = (*Provider)(nil)

// New returns a provider logging to log (nil discards). It looks up
// timeout(1) once, to bound post commands.
func New(log *slog.Logger) *Provider {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bin, err := exec.LookPath("timeout")
	if err != nil {
		log.Warn("timeout(1) not found: scaffold post commands will run without a time limit", "error", err)
		bin = ""
	}
	return &Provider{log: log, timeoutBin: bin}
}

// Name returns "choria".
func (p *Provider) Name() string { return Name }

// Status renders props in noop mode. With ensure absent it keeps in Changed
// and Stable only files that exist on disk, and when the target does not
// exist it renders nothing and returns empty metadata.
func (p *Provider) Status(ctx context.Context, env *templates.Env, props *scaffoldtype.Properties) (*protocol.ScaffoldState, error) {
	if props.Ensure == scaffoldtype.EnsureAbsent {
		exists, err := targetExists(props.Name)
		if err != nil {
			return nil, err
		}
		if !exists {
			return newState(props, false), nil
		}
	}
	st, err := p.render(ctx, env, props, true)
	if err != nil {
		return nil, err
	}
	if props.Ensure == scaffoldtype.EnsureAbsent {
		tgt, err := openTarget(props.Name)
		if err != nil {
			return nil, err
		}
		st.Metadata.Changed = existing(tgt, props.Name, st.Metadata.Changed)
		st.Metadata.Stable = existing(tgt, props.Name, st.Metadata.Stable)
		if tgt != nil {
			_ = tgt.Close()
		}
	}
	return st, nil
}

// Scaffold renders props into the target (noop: only reports) and, when
// props.Purge is set and not noop, deletes the purged files.
func (p *Provider) Scaffold(ctx context.Context, env *templates.Env, props *scaffoldtype.Properties, noop bool) (*protocol.ScaffoldState, error) {
	return p.render(ctx, env, props, noop)
}

func (p *Provider) render(ctx context.Context, env *templates.Env, props *scaffoldtype.Properties, noop bool) (*protocol.ScaffoldState, error) {
	return p.renderThen(ctx, env, props, noop, nil)
}

// renderThen is render calling inspect, when set, with the staged render and
// the actions found before anything is purged (see diff.go).
func (p *Provider) renderThen(ctx context.Context, env *templates.Env, props *scaffoldtype.Properties, noop bool, inspect func(stage string, tgt *safefs.Dir, result []scaffold.ManagedFile)) (*protocol.ScaffoldState, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scaffold %s: %w", props.Name, err)
	}
	source, err := sourceDirectory(props.Source)
	if err != nil {
		return nil, fmt.Errorf("scaffold %s: source %q: %w: %w", props.Name, props.Source, resources.ErrInvalid, err)
	}
	if env == nil {
		env = templates.New(nil, nil)
	}
	if props.Data != nil {
		// The scaffold's own data replaces the run's data entirely (the
		// caller's functions, as registrations(), stay).
		env = templates.New(env.Facts(), props.Data, env.FunctionOptions()...)
	}
	if _, err := targetExists(props.Name); err != nil {
		return nil, err
	}

	// The library writes by path, so it renders into a private directory
	// (root's, mode 0700) and place copies the result into the target
	// through directory handles.
	private, err := os.MkdirTemp("", "ccm-scaffold-")
	if err != nil {
		return nil, fmt.Errorf("scaffold %s: %w", props.Name, err)
	}
	defer os.RemoveAll(private)
	stage := filepath.Join(private, "target")
	// The library reads by path: it renders a private copy of the source
	// made through directory handles (see copySource).
	copied := privateSource(private)
	if err := copySource(source, copied); err != nil {
		return nil, fmt.Errorf("scaffold %s: %w", props.Name, err)
	}

	post, limit := p.boundPost(ctx, props.Post)
	left, right := delimiters(props)
	r := &renderer{
		log:       resources.Logger(ctx, p.log).With("scaffold", props.Name),
		engine:    props.Engine,
		source:    copied,
		stage:     stage,
		left:      left,
		right:     right,
		skipEmpty: props.SkipEmpty,
		post:      post,
	}
	switch props.Engine {
	case scaffoldtype.EngineGo:
		r.goFuncs = goFuncs(env)
		r.data = goData(env)
	case scaffoldtype.EngineJet:
		r.jetFuncs = jetFuncs(env)
		r.data = jetData(env)
	default:
		return nil, fmt.Errorf("scaffold %s: %w %q", props.Name, ErrUnknownEngine, props.Engine)
	}
	// Every template renders in the template sandbox (one budget per
	// file, shared with the partials it renders).
	if err := r.run(); err != nil {
		return nil, fmt.Errorf("scaffold %s: %w", props.Name, renderError(err, limit))
	}

	var tgt *safefs.Dir
	if noop {
		tgt, err = openTarget(props.Name)
	} else {
		tgt, err = safefs.MkdirAll(props.Name, 0o755)
	}
	if err != nil {
		return nil, fmt.Errorf("scaffold %s: %w", props.Name, err)
	}
	if tgt != nil {
		defer tgt.Close()
	}
	result, err := place(stage, tgt, noop)
	if err != nil {
		return nil, fmt.Errorf("scaffold %s: %w", props.Name, err)
	}

	if inspect != nil {
		inspect(stage, tgt, result)
	}
	st := newState(props, tgt != nil)
	md := st.Metadata
	for _, f := range result {
		path := filepath.Join(props.Name, filepath.FromSlash(f.Path))
		switch f.Action {
		case scaffold.FileActionEqual:
			md.Stable = append(md.Stable, path)
		case scaffold.FileActionAdd, scaffold.FileActionUpdate:
			md.Changed = append(md.Changed, path)
		case scaffold.FileActionRemove:
			md.Purged = append(md.Purged, path)
		}
	}
	if props.Purge {
		if err := purge(resources.Logger(ctx, p.log), tgt, props.Name, md.Purged, noop); err != nil {
			return st, err
		}
	}
	return st, nil
}

// purge deletes files the source does not render, through handles on their
// directories opened from tgt; under noop it only logs.
func purge(log *slog.Logger, tgt *safefs.Dir, target string, files []string, noop bool) error {
	for _, f := range files {
		if !inside(target, f) {
			return fmt.Errorf("scaffold %s: purge %s: %w", target, f, ErrOutsideTarget)
		}
		if noop || tgt == nil {
			log.Info("would have purged file", "scaffold", target, "file", f)
			continue
		}
		rel, err := filepath.Rel(target, f)
		if err != nil {
			return fmt.Errorf("scaffold %s: purge: %w", target, err)
		}
		if err := removeIn(tgt, filepath.ToSlash(rel)); err != nil {
			return fmt.Errorf("scaffold %s: purge: %w", target, err)
		}
		log.Info("purged file", "scaffold", target, "file", f)
	}
	return nil
}

// delimiters returns the custom delimiters, or Jet's [[ ]] defaults (the
// library's own Jet default would be {{ }}).
func delimiters(props *scaffoldtype.Properties) (string, string) {
	if props.LeftDelimiter != "" && props.RightDelimiter != "" {
		return props.LeftDelimiter, props.RightDelimiter
	}
	if props.Engine == scaffoldtype.EngineJet {
		return "[[", "]]"
	}
	return "", ""
}

func newState(props *scaffoldtype.Properties, exists bool) *protocol.ScaffoldState {
	ensure := scaffoldtype.EnsureAbsent
	if exists {
		ensure = scaffoldtype.EnsurePresent
	}
	return &protocol.ScaffoldState{
		CommonState: protocol.NewCommonState(protocol.TypeScaffold, props.Name, ensure),
		Metadata: &protocol.ScaffoldMetadata{
			Name:         props.Name,
			Provider:     Name,
			TargetExists: exists,
			Changed:      []string{},
			Purged:       []string{},
			Stable:       []string{},
			Engine:       props.Engine,
		},
	}
}

// targetExists reports whether the target directory exists (opened
// through handles, see openTarget); a target that exists but is not a
// directory is ErrTargetNotDirectory.
func targetExists(target string) (bool, error) {
	d, err := openTarget(target)
	if err != nil || d == nil {
		return false, err
	}
	return true, d.Close()
}

// existing keeps the files that are on disk below tgt (nil: none).
func existing(tgt *safefs.Dir, target string, files []string) []string {
	out := []string{}
	if tgt == nil {
		return out
	}
	for _, f := range files {
		rel, err := filepath.Rel(target, f)
		if err == nil && inside(target, f) && existsIn(tgt, filepath.ToSlash(rel)) {
			out = append(out, f)
		}
	}
	return out
}

// inside reports whether path lies strictly below dir.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsAbs(path) && rel != "." && filepath.IsLocal(rel)
}

// sourceDirectory returns the local directory a source names. The type
// passes URL sources through unchanged (a source may be a path or a URL);
// this provider reads
// file:// URLs of absolute local directories (host empty or localhost) and
// refuses every other scheme.
func sourceDirectory(source string) (string, error) {
	if !scaffoldtype.IsURL(source) {
		return source, nil
	}
	u, err := url.Parse(source)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.RawQuery != "" || u.Fragment != "" ||
		!filepath.IsAbs(u.Path) || filepath.Clean(u.Path) != u.Path {
		return "", ErrUnsupportedSource
	}
	return u.Path, nil
}
