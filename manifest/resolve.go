package manifest

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// RunOptions describe one apply or audit.
type RunOptions struct {
	// Noop reports what would change without changing anything.
	Noop bool
	// MonitorOnly runs only the resources' health checks (see
	// engine.RunOptions.MonitorOnly).
	MonitorOnly bool
	// Facts are what templates, conditions and the hierarchy see as facts.
	Facts map[string]any
	// Data is extra data merged over the manifest's resolved data (--data FILE).
	Data map[string]any
	// AllowEnviron exposes the process environment to templates (environ.);
	// local CLI use only, a remote (agent) run leaves it false.
	AllowEnviron bool
	// AllowFiles exposes file(), readFile() and the .templ/.jet files of
	// template() and jet() below the manifest's working directory to
	// templates; local CLI use only.
	AllowFiles bool
	// KV, when set, gives templates kvGet(bucket, key) (e.g. natskv.New(js));
	// local CLI use only: a remote run must not read the agent's buckets.
	// A resource whose templates call kvGet is sensitive.
	KV templates.KVReader
	// Log receives progress messages; nil discards.
	Log *slog.Logger
	// LogWith are key/value pairs, as slog.Logger.With takes them, that
	// every line of the run carries: Log's and the engine's (see
	// engine.RunOptions.LogWith).
	LogWith []any
	// Guard, when set, is asked about every resource once it is prepared,
	// before the first is applied (see engine.RunOptions.Guard); a refusal
	// fails Run with nothing applied.
	Guard func(p *engine.Prepared) error
	// Prepared, when set, is given every resource Run prepared (see
	// engine.RunOptions.Prepared).
	Prepared func(p *engine.Prepared)
	// OnStart, when set, is called by Run once every resource has been
	// validated, before the first is applied, with the templated
	// pre_message ("" when none) and the number of resources the
	// manifest holds (those of child manifests not counted).
	OnStart func(preMessage string, resources int)
	// OnEvent, when set, is called by Run with each event as soon as the
	// resource is done, in order.
	OnEvent func(ev *protocol.TransactionEvent)
	// TemplateOptions expose more to the manifest's templates (e.g. a
	// function with templates.WithFunction).
	TemplateOptions []templates.Option
	// DiffLimit is the content size, in bytes on each side, above which a
	// diff is a summary line; 0 means resources.DefaultDiffLimit.
	DiffLimit int64
}

// Resolved is a manifest after data resolution and template expansion: what
// the engine would run, computed without touching the host.
type Resolved struct {
	// Data is the resolved data templates saw.
	Data map[string]any
	// Hierarchy lists the override keys applied, in the order they were
	// merged (see Hiera.Resolve).
	Hierarchy []string
	// Resources are in declaration order, one per name, fully templated
	// (control.if/unless stay expressions).
	Resources []engine.Spec
	// PreMessage and PostMessage are the templated messages.
	PreMessage, PostMessage string
	// FailOnError stops a run after its first failed resource.
	FailOnError bool
}

// plan is a manifest resolved for one run, before property templates are
// expanded: the engine expands them exactly once when it prepares each spec.
type plan struct {
	data      map[string]any
	hierarchy []string
	env       *templates.Env
	specs     []plannedSpec
	pre, post string
}

// plannedSpec is one resource: its entry (for messages) and its properties
// with defaults and "*" applied and the name expanded.
type plannedSpec struct {
	entry *entry
	name  string
	props map[string]any
}

func (p plannedSpec) label() string {
	return fmt.Sprintf("resources[%d] %s#%s", p.entry.index, p.entry.typ, p.name)
}

// Resolve computes the data (base data, hierarchy overrides with first/deep
// merge, then opts.Data, then the data's validation rules) and expands every resource (defaults, "*", name
// arrays, templates) into the ordered list of specs the engine would run,
// without touching the host. Duplicate resources and require/subscribe
// references naming no earlier resource are errors. Every error wraps
// resources.ErrInvalid.
func (m *Manifest) Resolve(opts RunOptions) (*Resolved, error) {
	pl, err := m.plan(opts)
	if err != nil {
		return nil, err
	}
	r := &Resolved{
		Data:        pl.data,
		Hierarchy:   pl.hierarchy,
		PreMessage:  pl.pre,
		PostMessage: pl.post,
		FailOnError: m.failOnError,
		Resources:   make([]engine.Spec, 0, len(pl.specs)),
	}
	nodes := make([]refNode, 0, len(pl.specs))
	for _, ps := range pl.specs {
		expanded, err := pl.env.ExpandValue(ps.props, "control")
		if err != nil {
			return nil, invalidWith(err, "%s: template: %v", ps.label(), err)
		}
		props := expanded.(map[string]any)
		r.Resources = append(r.Resources, engine.Spec{Type: ps.entry.typ, Properties: props})
		nodes = append(nodes, nodeFromMap(ps.entry.index, ps.entry.typ, props))
	}
	if _, err := checkRefs(nodes); err != nil {
		return nil, err
	}
	return r, nil
}

// plan resolves data and expands entries into specs.
func (m *Manifest) plan(opts RunOptions) (*plan, error) {
	data, matched, err := m.resolveData(opts.Facts, opts.Data)
	if err != nil {
		return nil, err
	}
	var envOpts []templates.Option
	if opts.AllowEnviron {
		envOpts = append(envOpts, templates.WithEnviron(os.Environ()))
	}
	if opts.AllowFiles && m.workingDir != "" {
		envOpts = append(envOpts, templates.WithFiles(m.workingDir))
	}
	if len(m.sensitiveData) > 0 {
		envOpts = append(envOpts, templates.WithSensitive(m.sensitiveData))
	}
	if opts.KV != nil {
		envOpts = append(envOpts, templates.WithKV(opts.KV, 0))
	}
	envOpts = append(envOpts, opts.TemplateOptions...)
	env := templates.New(opts.Facts, data, envOpts...)
	pl := &plan{data: data, hierarchy: matched, env: env}
	if pl.pre, err = env.ExpandString(m.preMessage); err != nil {
		return nil, invalidWith(err, "ccm.pre_message: %v", err)
	}
	if pl.post, err = env.ExpandString(m.postMessage); err != nil {
		return nil, invalidWith(err, "ccm.post_message: %v", err)
	}
	entries := m.entries
	if m.jetFile != "" {
		if entries, err = m.jetEntries(env); err != nil {
			return nil, err
		}
	}
	for _, e := range entries {
		specs, err := expandEntry(e, env)
		if err != nil {
			return nil, err
		}
		pl.specs = append(pl.specs, specs...)
	}
	return pl, nil
}

// expandEntry applies the defaults and "*" and makes one spec per name.
func expandEntry(e *entry, env *templates.Env) ([]plannedSpec, error) {
	base := map[string]any{}
	if e.defaults != nil {
		d, err := flatten(e, e.defaults.props, e.defaults.splat, env, "defaults")
		if err != nil {
			return nil, err
		}
		base = d
	}
	own, err := flatten(e, e.props, e.splat, env, "")
	if err != nil {
		return nil, err
	}
	for k, v := range own {
		base[k] = v
	}
	names, err := expandNames(e, env)
	if err != nil {
		return nil, err
	}
	out := make([]plannedSpec, 0, len(names))
	for _, n := range names {
		props := make(map[string]any, len(base)+1)
		for k, v := range base {
			props[k] = cloneValue(v)
		}
		props["name"] = n
		out = append(out, plannedSpec{entry: e, name: n, props: props})
	}
	return out, nil
}

// flatten returns props with the "*" map merged in; a property set both
// directly and through "*" is an error (which value wins would be a guess).
func flatten(e *entry, props map[string]any, splat any, env *templates.Env, which string) (map[string]any, error) {
	out := cloneMap(props)
	if splat == nil {
		return out, nil
	}
	where := e.label()
	if which != "" {
		where += " " + which
	}
	v := splat
	if s, ok := splat.(string); ok {
		ev, err := env.Expand(s)
		if err != nil {
			return nil, invalidWith(err, "%s: property *: %v", where, err)
		}
		v = ev
	}
	hash, ok := v.(map[string]any)
	if !ok {
		return nil, invalidf("%s: property * must be an object (or a template giving one), got %s", where, kind(v))
	}
	for _, k := range sortedKeys(hash) {
		if k == "name" || k == splatKey {
			return nil, invalidf("%s: property * may not set %s", where, k)
		}
		if _, dup := out[k]; dup {
			return nil, invalidf("%s: property %s is set both directly and through *", where, k)
		}
		out[k] = cloneValue(hash[k])
	}
	return out, nil
}

// expandNames resolves the entry's name to the list of resource names: a
// string, a list of strings, or a template giving either.
func expandNames(e *entry, env *templates.Env) ([]string, error) {
	var raw []any
	switch n := e.name.(type) {
	case string:
		raw = []any{n}
	case []any:
		raw = n
	}
	var out []string
	for i, r := range raw {
		s, _ := r.(string)
		v, err := env.Expand(s)
		if err != nil {
			return nil, invalidWith(err, "%s: name: %v", e.label(), err)
		}
		switch t := v.(type) {
		case string:
			out = append(out, t)
		case []any:
			for k, el := range t {
				str, ok := el.(string)
				if !ok {
					return nil, invalidf("%s: name[%d][%d]: expected a string, got %s", e.label(), i, k, kind(el))
				}
				out = append(out, str)
			}
		default:
			return nil, invalidf("%s: name: expected a string or a list of strings, got %s", e.label(), kind(v))
		}
	}
	return out, nil
}

// renderDoc is the shape --render prints.
type renderDoc struct {
	Data      map[string]any   `yaml:"data"`
	Resources []renderResource `yaml:"resources"`
}

type renderResource struct {
	Type       string         `yaml:"type"`
	Properties map[string]any `yaml:"properties"`
}

// YAML renders the resolved manifest as a YAML document of data and
// resources ({type, properties} in order).
func (r *Resolved) YAML() ([]byte, error) {
	doc := renderDoc{Data: r.Data, Resources: make([]renderResource, 0, len(r.Resources))}
	for _, s := range r.Resources {
		doc.Resources = append(doc.Resources, renderResource{Type: s.Type, Properties: s.Properties})
	}
	if doc.Data == nil {
		doc.Data = map[string]any{}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return buf.Bytes(), nil
}
