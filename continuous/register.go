package continuous

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// registerKey is the property CCM reads registration entries from.
const registerKey = "register_when_stable"

// maxRegistrations bounds the entries of one manifest.
const maxRegistrations = 1000

// registrations are a manifest's register_when_stable entries by
// resource (type#name), as written (templates unexpanded).
type registrations map[string][]map[string]any

// loadManifest reads a manifest file, takes the register_when_stable
// entries out of its resources and parses the rest as any manifest (the
// resources engine knows nothing of registration). Its working directory
// is the file's.
func loadManifest(path string) (*manifest.Manifest, registrations, error) {
	data, err := filecheck.ReadBounded(path, manifest.DefaultMaxBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	var top map[string]any
	if _, err := protocol.DecodeStrict(data, &top, protocol.Limits{MaxBytes: manifest.DefaultMaxBytes}); err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	regs, err := extractRegistrations(top)
	if err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	doc, err := json.Marshal(top)
	if err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	m, err := manifest.Parse(doc, manifest.ParseOptions{WorkingDir: filepath.Dir(abs)})
	if err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	return m, regs, nil
}

// extractRegistrations removes register_when_stable from every resource
// of the document (list and single-object forms) and returns them by
// type#name for the literal names.
func extractRegistrations(top map[string]any) (registrations, error) {
	ccm, _ := top["ccm"].(map[string]any)
	items, _ := ccm["resources"].([]any)
	out := registrations{}
	n := 0
	take := func(typ, name string, props map[string]any) error {
		raw, ok := props[registerKey]
		if !ok {
			return nil
		}
		delete(props, registerKey)
		list, ok := raw.([]any)
		if !ok {
			return fmt.Errorf("%s#%s: %s must be a list of entries", typ, name, registerKey)
		}
		for i, el := range list {
			e, ok := el.(map[string]any)
			if !ok {
				return fmt.Errorf("%s#%s: %s[%d] must be an object", typ, name, registerKey, i)
			}
			if n++; n > maxRegistrations {
				return fmt.Errorf("more than %d %s entries", maxRegistrations, registerKey)
			}
			out[typ+"#"+name] = append(out[typ+"#"+name], e)
		}
		return nil
	}
	for _, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			continue
		}
		for typ, body := range obj {
			switch b := body.(type) {
			case []any:
				for _, el := range b {
					entry, ok := el.(map[string]any)
					if !ok {
						continue
					}
					for name, p := range entry {
						if props, ok := p.(map[string]any); ok {
							if err := take(typ, name, props); err != nil {
								return nil, err
							}
						}
					}
				}
			case map[string]any:
				var names []string
				switch n := b["name"].(type) {
				case string:
					names = []string{n}
				case []any:
					for _, v := range n {
						if s, ok := v.(string); ok {
							names = append(names, s)
						}
					}
				}
				raw, has := b[registerKey]
				for _, name := range names {
					if has {
						b[registerKey] = raw
					}
					if err := take(typ, name, b); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return out, nil
}

// expandEntry expands the templates of a written entry with env and
// decodes it strictly.
func expandEntry(raw map[string]any, env *templates.Env) (*registration.Entry, error) {
	exp := make(map[string]any, len(raw))
	for k, v := range raw {
		switch val := v.(type) {
		case string:
			x, err := env.Expand(val)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if k == "port" || k == "priority" {
				if s, ok := x.(string); ok {
					n, err := strconv.Atoi(s)
					if err != nil {
						return nil, fmt.Errorf("%s %.40q is not a number", k, s)
					}
					x = n
				}
			}
			exp[k] = x
		case map[string]any:
			m := map[string]any{}
			for ak, av := range val {
				s, ok := av.(string)
				if !ok {
					m[ak] = av
					continue
				}
				x, err := env.ExpandString(s)
				if err != nil {
					return nil, fmt.Errorf("%s.%s: %w", k, ak, err)
				}
				m[ak] = x
			}
			exp[k] = m
		default:
			exp[k] = v
		}
	}
	// Checked before decoding: a validation error would quote the value.
	if env.Sensitive(raw, exp) {
		return nil, fmt.Errorf("%w: the entry reads data marked sensitive or holds one of its values; it is not published (the fleet reads registrations)", ErrSensitive)
	}
	b, err := json.Marshal(exp)
	if err != nil {
		return nil, err
	}
	var e registration.Entry
	if _, err := protocol.DecodeStrict(b, &e, protocol.Limits{MaxBytes: registration.MaxEntryBytes}); err != nil {
		return nil, err
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return &e, nil
}

// Registrar publishes and withdraws entries.
type Registrar interface {
	Publish(ctx context.Context, e *registration.Entry) error
	Withdraw(ctx context.Context, e *registration.Entry) error
}

// StreamRegistrar keeps entries in the registration stream ("jetstream"
// destination), or with Core set publishes them on core NATS only
// ("nats", fire and forget: nothing to withdraw). Entries are published
// at the subjects of Signer's key (see registration.Entry.PublisherSubject)
// and name Host.
type StreamRegistrar struct {
	JS     jetstream.JetStream
	Stream string
	Signer *protocol.KeySigner
	Core   bool
	// Host is this host's identity, written into every entry.
	Host string
}

var _ Registrar = (*StreamRegistrar)(nil)

// Publish stores (or publishes) e signed.
func (r *StreamRegistrar) Publish(ctx context.Context, e *registration.Entry) error {
	own := *e
	own.Host = r.Host
	if r.Core {
		msg, err := registration.NewMsg(&own, r.Signer)
		if err != nil {
			return err
		}
		return r.JS.Conn().PublishMsg(msg)
	}
	return registration.Publish(ctx, r.JS, &own, r.Signer)
}

// Withdraw replaces this host's entry for e's endpoint with a signed
// withdrawal; nothing for core NATS.
func (r *StreamRegistrar) Withdraw(ctx context.Context, e *registration.Entry) error {
	if r.Core {
		return nil
	}
	own := *e
	own.Host = r.Host
	return registration.Withdraw(ctx, r.JS, &own, r.Signer)
}

// register publishes the entries of every resource the run found stable
// (not failed, not skipped, every health check OK) and withdraws those of
// a resource that failed or whose health check is CRITICAL. A signed
// bundle's entries are published only for the services its signer's
// registration.services allows; a refusal is audited once per bundle and
// service.
func (w *worker) register(ctx context.Context, m *manifest.Manifest, regs registrations, rep *manifest.Report, b *bundle) {
	a := w.a
	if a.opts.Registrar == nil || len(regs) == 0 || rep == nil {
		return
	}
	log := a.log.With("manifest", w.src.String())
	res, err := m.Resolve(manifest.RunOptions{Facts: a.facts, Data: a.extData, TemplateOptions: a.tmplOpts})
	if err != nil {
		log.Error("registrations: could not resolve the manifest's data", "error", err)
		return
	}
	env := templates.New(a.facts, res.Data, templates.WithSensitive(m.SensitiveData()))
	for _, ev := range rep.Events {
		raws := regs[ev.Type+"#"+ev.Name]
		if len(raws) == 0 {
			continue
		}
		stable, critical := !ev.Failed && !ev.Skipped && !ev.Noop, false
		for _, hc := range ev.HealthChecks {
			if hc.Status != protocol.HealthOK {
				stable = false
			}
			if hc.Status == protocol.HealthCritical {
				critical = true
			}
		}
		if !stable && !ev.Failed && !critical {
			continue
		}
		for i, raw := range raws {
			e, err := expandEntry(raw, env)
			if err != nil {
				log.Error("registrations: invalid entry", "resource", ev.Type+"#"+ev.Name, "index", i, "error", err)
				continue
			}
			if b == nil || b.signer == nil {
				if !w.localRegistrationAllowed(ev.Type+"#"+ev.Name, e.Service, b) {
					continue
				}
			} else {
				if d := b.signer.CheckRegistration(e.Service); !d.Allowed {
					if b.regRefused == nil {
						b.regRefused = map[string]bool{}
					}
					if !b.regRefused[e.Service] {
						b.regRefused[e.Service] = true
						rec := w.record(b, DecisionForbidden, b.signer.RefusalMessage(ev.Type+"#"+ev.Name, d), nil)
						rec.Rule, rec.Value = d.Rule, d.Value
						a.audit(rec)
					}
					log.Error("registrations: refused by the policy", "service", e.Service, "rule", d.Rule)
					continue
				}
			}
			if stable {
				err = a.opts.Registrar.Publish(ctx, e)
			} else {
				err = a.opts.Registrar.Withdraw(ctx, e)
			}
			if err != nil {
				log.Error("registrations: could not update the entry", "subject", e.Subject(), "publish", stable, "error", err)
			} else {
				log.Debug("registrations: updated", "subject", e.Subject(), "publish", stable)
			}
		}
	}
}

// lookupTimeout bounds one registrations() lookup.
const lookupTimeout = 10 * time.Second

// registrationsFunc is the registrations(cluster, protocol, service,
// address) template function CCM documents: the entries registered now
// whose signature verifies, "*" matching any value in a position. Each
// entry shows CCM's template keys (Cluster, Service, Protocol, Address,
// Port, Priority, TTL, Annotations).
func registrationsFunc(js jetstream.JetStream, stream string, log *slog.Logger) templates.Function {
	return func(params ...any) (any, error) {
		if len(params) != 4 {
			return nil, fmt.Errorf("registrations(cluster, protocol, service, address): %d arguments", len(params))
		}
		args := make([]string, 4)
		for i, p := range params {
			s, ok := p.(string)
			if !ok {
				return nil, fmt.Errorf("registrations: argument %d must be a string", i+1)
			}
			args[i] = s
		}
		ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
		defer cancel()
		recs, skipped, err := registration.Query(ctx, js, stream, args[0], args[1], args[2], args[3])
		if err != nil {
			return nil, fmt.Errorf("registrations: %w", err)
		}
		for _, s := range skipped {
			log.Warn("registrations: entry dropped", "subject", s.Subject, "reason", s.Reason)
		}
		out := make([]registration.Entry, len(recs))
		for i, r := range recs {
			out[i] = r.Entry
		}
		return out, nil
	}
}
