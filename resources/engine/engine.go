package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ccm-fleet/ccm/internal/urlscope"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/redact"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// Engine applies resources using the types and providers of a registry. It
// holds no per-run state and is safe for concurrent use.
type Engine struct {
	reg *resources.Registry
	log *slog.Logger
	now func() time.Time
	// health runs health checks; nil runs none (each is UNKNOWN)
	health HealthRunner
	// goss validates goss health checks; nil refuses them at Prepare,
	// unless gossScoped
	goss GossRunner
	// gossScoped refuses at Prepare goss rules whose host objects the
	// resource catalog cannot declare (WithScopedGoss)
	gossScoped bool
}

// Option configures an Engine.
type Option func(*Engine)

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// New returns an Engine over reg.
func New(reg *resources.Registry, opts ...Option) *Engine {
	e := &Engine{reg: reg, log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Registry returns the registry the engine uses.
func (e *Engine) Registry() *resources.Registry { return e.reg }

// RunOptions describe one run.
type RunOptions struct {
	// Noop reports what would change without changing anything.
	Noop bool
	// Env is what templates and conditions see; required.
	Env *templates.Env
	// WorkingDir resolves relative sources; may be empty.
	WorkingDir string
	// Guard, when set, is asked about every managed resource once Prepare
	// has expanded, decoded and validated it and chosen its provider: the
	// exact value Apply would run. An error (wrap resources.ErrForbidden)
	// fails Prepare, so a manifest is refused before anything is applied.
	Guard func(p *Prepared) error
	// Prepared, when set, is given every resource Prepare made (managed
	// or not): the typed value Apply runs, so a caller learns what a run
	// asked for without decoding its events again.
	Prepared func(p *Prepared)
	// MonitorOnly runs only the resources' health checks: nothing is
	// checked against its desired state or changed.
	MonitorOnly bool
	// DiffLimit is the content size, in bytes on each side, above which a
	// diff is a summary line; 0 means resources.DefaultDiffLimit.
	DiffLimit int64
	// LogWith are key/value pairs, as slog.Logger.With takes them, that
	// every line the run logs carries (the engine's, its health checks'
	// and its providers'): what names the run, e.g. the agent's request
	// id. The lines go to the engine's logger (WithLogger).
	LogWith []any
}

// Session is one run. Its methods may be called from one goroutine at a time.
type Session struct {
	eng  *Engine
	opts RunOptions
	// log is the engine's logger with the run's LogWith
	log *slog.Logger
	// guards providers
	mu        sync.Mutex
	providers map[string]resources.Provider
}

// NewSession starts a run.
func (e *Engine) NewSession(opts RunOptions) *Session {
	if opts.Env == nil {
		opts.Env = templates.New(nil, nil)
	}
	return &Session{eng: e, opts: opts, log: e.log.With(opts.LogWith...), providers: map[string]resources.Provider{}}
}

// Spec is a resource as asked for: its type and raw properties.
type Spec struct {
	Type       string
	Properties map[string]any
	// Decoded, when set, are the properties already decoded from the
	// request's bytes (see DecodeJSON), none of them a template: Prepare
	// validates this value instead of expanding and decoding Properties.
	Decoded resources.Properties
}

// Prepared is a resource ready to apply: decoded, validated, its conditions
// evaluated and its provider chosen.
type Prepared struct {
	Type       resources.Type
	Properties resources.Properties
	// Managed is false when control.if/unless say the resource is not managed.
	Managed bool
	// WorkingDir is the directory its relative sources resolve against
	// (the run's), "" when none.
	WorkingDir string
	// Fetch are the guards that judge what the resource fetches when it
	// is applied (every URL, redirect hop and address dialled); a Guard
	// of RunOptions sets them for a signer's resources. None: what it
	// fetches is not judged (the host's own manifests).
	Fetch   []*urlscope.Guard
	factory resources.Factory
	// selectErr is a provider selection failure that fails the resource
	// (rather than the request) when it is applied.
	selectErr error
	// secrets is what of the resource must not leave the host
	secrets *redact.Secrets
}

// Secrets returns what of the resource must not leave the host: for a
// sensitive resource its content, outputs and health messages, its
// templated property values and the values of data marked sensitive.
func (p *Prepared) Secrets() *redact.Secrets { return p.secrets }

// Name returns the resolved resource name.
func (p *Prepared) Name() string { return p.Properties.Common().Name }

// Ref returns "type#name".
func (p *Prepared) Ref() string { return p.Type.Name() + "#" + p.Name() }

// Provider returns the name of the provider chosen to apply the resource,
// "" when none could be chosen or the resource is not managed.
func (p *Prepared) Provider() string {
	if p.factory == nil {
		return ""
	}
	return p.factory.Name()
}

// controlKey holds conditions; they are expressions themselves, so templates
// inside them are not expanded first.
const controlKey = "control"

// Prepare turns a spec into a Prepared resource without touching the host.
// Every error wraps resources.ErrInvalid and names the resource and problem;
// for a sensitive resource it is redacted (see redact.Error).
func (s *Session) Prepare(spec Spec) (*Prepared, error) {
	t, err := s.eng.reg.Type(spec.Type)
	if err != nil {
		return nil, err
	}
	if spec.Decoded != nil {
		return s.prepareDecoded(t, spec.Decoded)
	}
	label := spec.Type
	if n, ok := spec.Properties["name"].(string); ok && n != "" {
		label = spec.Type + "#" + n
	}
	raw, err := s.expandGossKeys(spec.Properties)
	if err != nil {
		secrets := s.secrets(label, spec.Properties, nil, false)
		return nil, redact.Error(fmt.Errorf("%s: %w: template: %w", label, resources.ErrInvalid, err), secrets)
	}
	expanded, err := s.opts.Env.ExpandValue(raw, controlKey)
	if err != nil {
		secrets := s.secrets(label, spec.Properties, nil, false)
		return nil, redact.Error(fmt.Errorf("%s: %w: template: %w", label, resources.ErrInvalid, err), secrets)
	}
	m, _ := expanded.(map[string]any)
	props, err := Decode(t, m)
	if err == nil {
		markRegistrations(s.opts.Env, props, spec.Properties, m)
	}
	if props != nil && props.Common().Name != "" {
		label = spec.Type + "#" + props.Common().Name
	}
	marked, _ := m["sensitive"].(bool)
	secrets := s.secrets(label, spec.Properties, m, marked)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("%s: %w", label, err), secrets)
	}
	return s.prepareValid(t, props, label, secrets)
}

// prepareValid makes the Prepared resource of valid properties props:
// sensitive when secrets are active, its conditions evaluated, its
// provider chosen and the guard asked.
func (s *Session) prepareValid(t resources.Type, props resources.Properties, label string, secrets *redact.Secrets) (*Prepared, error) {
	c := props.Common()
	holdSecrets(props, secrets)
	if secrets.Active() {
		c.Sensitive = true
	}
	if err := s.eng.refuseGoss(c); err != nil {
		return nil, redact.Error(fmt.Errorf("%s: %w", label, err), secrets)
	}
	managed, err := s.managed(c.Control)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("%s: %w: %w", label, resources.ErrInvalid, err), secrets)
	}
	p := &Prepared{Type: t, Properties: props, Managed: managed, WorkingDir: s.opts.WorkingDir, secrets: secrets}
	if !managed {
		s.prepared(p)
		return p, nil
	}
	f, err := s.eng.reg.Select(t.Name(), c.Provider, s.opts.Env.Facts(), props)
	switch {
	case errors.Is(err, resources.ErrInvalid):
		return nil, redact.Error(fmt.Errorf("%s: %w", label, err), secrets)
	case err != nil:
		p.selectErr = err
	default:
		p.factory = f
	}
	if s.opts.Guard != nil {
		if err := s.opts.Guard(p); err != nil {
			return nil, redact.Error(fmt.Errorf("%s: %w", label, err), secrets)
		}
	}
	s.prepared(p)
	return p, nil
}

// holdSecrets makes secrets sensitive and adds the properties' own secrets
// when they hold any (resources.SecretHolder).
func holdSecrets(props resources.Properties, secrets *redact.Secrets) {
	h, ok := props.(resources.SecretHolder)
	if !ok || secrets == nil {
		return
	}
	names, values := h.Secrets()
	if len(values) == 0 {
		return
	}
	secrets.Sensitive = true
	for _, n := range names {
		secrets.AddProperty(n)
	}
	secrets.AddValues(values...)
}

// prepared hands p to the run's Prepared hook, when there is one.
func (s *Session) prepared(p *Prepared) {
	if s.opts.Prepared != nil {
		s.opts.Prepared(p)
	}
}

// secrets builds what of a resource must not leave the host: it is
// sensitive when marked so or when it reads data marked sensitive (raw as
// written, expanded nil when expansion failed); then its templated
// property values and the sensitive data values are secret.
func (s *Session) secrets(ref string, raw, expanded map[string]any, marked bool) *redact.Secrets {
	env := s.opts.Env
	var exp any
	if expanded != nil {
		exp = expanded
	}
	sensitive := marked || env.Sensitive(raw, exp)
	sec := redact.New(ref, sensitive)
	if !sensitive {
		return sec
	}
	sec.AddValues(env.SensitiveValues()...)
	if expanded != nil {
		// A name identifies the resource in every record: it is never
		// redacted (a name made from sensitive data is, as its value).
		props := make(map[string]any, len(raw))
		for k, v := range raw {
			if k != "name" && k != "alias" {
				props[k] = v
			}
		}
		keys, values := templates.Templated(props, expanded)
		for _, k := range keys {
			sec.AddProperty(k)
		}
		sec.AddValues(values...)
	}
	return sec
}

// Decode turns expanded properties (templates already resolved) into the
// type's properties the way Prepare does: strictly (an unknown property or
// a wrong type names the property), then the type's default ensure, then
// Validate. It touches nothing and needs no provider, so a client can check
// a resource before sending it. Every error wraps resources.ErrInvalid; the
// properties are returned once decoded, even when Validate fails.
func Decode(t resources.Type, props map[string]any) (resources.Properties, error) {
	p, err := DecodeMap(t, props)
	if err != nil {
		return nil, err
	}
	return p, validate(t, p)
}

// validate sets the type's default ensure on p, then validates it.
func validate(t resources.Type, p resources.Properties) error {
	if c := p.Common(); c.Ensure == "" {
		c.Ensure = t.DefaultEnsure()
	}
	return p.Validate()
}

// invalidProperties is the *resources.InvalidError of properties that do
// not decode: its Problem names the property (`property "mode": ...`, `unknown
// property "colour"`), its Field and Reason are the decoder's.
func invalidProperties(err error) *resources.InvalidError {
	var pe *protocol.Error
	switch {
	case !errors.As(err, &pe):
		return &resources.InvalidError{Problem: err.Error(), Reason: err.Error()}
	case pe.UnknownKey():
		return &resources.InvalidError{Problem: fmt.Sprintf("unknown property %q", pe.Field), Field: pe.Field, Reason: pe.Reason()}
	case pe.Field != "":
		return &resources.InvalidError{Problem: fmt.Sprintf("property %q: %s", pe.Field, pe.Reason()), Field: pe.Field, Reason: pe.Reason()}
	default:
		return &resources.InvalidError{Problem: pe.Reason(), Reason: pe.Reason()}
	}
}

// managed applies the if/unless truth table: managed when If is unset or
// true and Unless is unset or false.
func (s *Session) managed(c *resources.Control) (bool, error) {
	if c == nil {
		return true, nil
	}
	if c.If != "" {
		ok, err := s.opts.Env.EvalBool(c.If)
		if err != nil {
			return false, fmt.Errorf("control.if: %w", err)
		}
		if !ok {
			return false, nil
		}
	}
	if c.Unless != "" {
		ok, err := s.opts.Env.EvalBool(c.Unless)
		if err != nil {
			return false, fmt.Errorf("control.unless: %w", err)
		}
		if ok {
			return false, nil
		}
	}
	return true, nil
}

// ApplyOptions adjust one Apply call.
type ApplyOptions struct {
	// Refresh is true when a resource this one subscribes to changed.
	Refresh bool
}

// Apply applies a prepared resource, then runs its health checks (also when
// the apply failed), and returns its event. Resource failures are recorded
// in the event (Failed, Errors), never returned. Under MonitorOnly only the
// health checks run. The event is redacted (redact.Event) with the
// resource's secrets before it is returned.
func (s *Session) Apply(ctx context.Context, p *Prepared, ao ApplyOptions) *protocol.TransactionEvent {
	c := p.Properties.Common()
	if s.opts.MonitorOnly {
		ev := protocol.NewTransactionEvent(NewID(), p.Type.Name(), c.Name, c.Alias)
		ev.Timestamp = s.eng.now().UTC()
		ev.RequestedEnsure = c.Ensure
		ev.Noop = s.opts.Noop
		defer redact.Event(ev, p.secrets)
		if !p.Managed {
			ev.Skipped = true
			return ev
		}
		start := s.eng.now()
		s.checkHealth(ctx, p, ev)
		ev.Duration = s.eng.now().Sub(start)
		return ev
	}
	ev := s.apply(ctx, p, ao)
	defer redact.Event(ev, p.secrets)
	if p.Managed && len(c.HealthChecks) > 0 {
		start := s.eng.now()
		s.checkHealth(ctx, p, ev)
		ev.Duration += s.eng.now().Sub(start)
		if ev.Failed && ev.Status != nil {
			ev.Status.Common().Stable = false
		}
	}
	return ev
}

// apply applies a prepared resource and returns its event.
func (s *Session) apply(ctx context.Context, p *Prepared, ao ApplyOptions) *protocol.TransactionEvent {
	c := p.Properties.Common()
	start := s.eng.now()
	ev := protocol.NewTransactionEvent(NewID(), p.Type.Name(), c.Name, c.Alias)
	ev.Timestamp = start.UTC()
	ev.RequestedEnsure = c.Ensure
	ev.Noop = s.opts.Noop
	ev.Properties = eventProperties(p.Properties)
	log := redact.Logger(s.log, p.secrets).With("resource", p.Ref())
	defer func() { ev.Duration = s.eng.now().Sub(start) }()

	if !p.Managed {
		ev.Skipped = true
		log.Info("skipped by control conditions")
		return ev
	}
	if p.selectErr != nil {
		ev.Failed = true
		ev.Errors = append(ev.Errors, redact.Message(p.selectErr, p.secrets))
		log.Error(ev.Outcome(), "error", p.selectErr)
		return ev
	}
	ev.Provider = p.factory.Name()
	prov, err := s.provider(p.factory)
	if err != nil {
		ev.Failed = true
		ev.Errors = append(ev.Errors, redact.Message(err, p.secrets))
		log.Error(ev.Outcome(), "provider", ev.Provider, "error", err)
		return ev
	}
	ac := &resources.ApplyContext{
		Noop:       s.opts.Noop,
		Refresh:    ao.Refresh,
		WorkingDir: s.opts.WorkingDir,
		Env:        s.opts.Env,
		Log:        log,
		DiffLimit:  s.opts.DiffLimit,
	}
	// The providers log through the same redacting logger as the engine,
	// and fetch only what the signer's URL scopes allow.
	actx := urlscope.WithGuards(resources.WithLogger(ctx, log), p.Fetch...)
	out, err := p.Type.Apply(actx, ac, p.Properties, prov)
	if out == nil {
		out = &resources.Outcome{}
	}
	ev.Changed = out.Changed
	ev.Refreshed = out.Refreshed
	if s.opts.Noop {
		ev.NoopMessage = out.NoopMessage
	}
	if out.Changed || out.Refreshed {
		ev.Diff = eventDiff(out.Diff)
	}
	if err != nil {
		ev.Failed = true
		ev.Errors = append(ev.Errors, redact.Message(err, p.secrets))
	}
	// As CCM: a failed resource has no status and no final ensure; any
	// other has the state the type read last (after a change, read again),
	// stable unless it failed or, under noop, would change.
	if out.State != nil && !ev.Failed {
		st := out.State.Common()
		st.Changed = ev.Changed
		st.Refreshed = ev.Refreshed
		st.Noop = ev.Noop
		st.NoopMessage = ev.NoopMessage
		st.Stable = !(ev.Noop && (ev.Changed || ev.Refreshed))
		ev.Status = out.State
		ev.FinalEnsure = st.Ensure
	}
	// One line per resource: a failure at error level with its error.
	if err != nil {
		log.Error(ev.Outcome(), "provider", ev.Provider, "error", err)
	} else {
		log.Info(ev.Outcome(), "provider", ev.Provider)
	}
	return ev
}

// provider returns the session's instance of the factory's provider.
func (s *Session) provider(f resources.Factory) (resources.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := f.Type() + "/" + f.Name()
	if p, ok := s.providers[key]; ok {
		return p, nil
	}
	p, err := f.New()
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", key, err)
	}
	s.providers[key] = p
	return p, nil
}

// Redactor is implemented by properties that hold secrets; events carry the
// redacted copy.
type Redactor interface {
	Redacted() any
}

// Ensure prepares and applies one resource. The error is non-nil only when
// the request could not be processed (it wraps resources.ErrInvalid); a
// resource that failed is reported in the event.
func (e *Engine) Ensure(ctx context.Context, opts RunOptions, spec Spec) (*protocol.TransactionEvent, error) {
	s := e.NewSession(opts)
	p, err := s.Prepare(spec)
	if err != nil {
		return nil, err
	}
	return s.Apply(ctx, p, ApplyOptions{}), nil
}

// NewID returns a random 128-bit identifier in hex.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
