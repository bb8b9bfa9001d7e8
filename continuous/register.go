package continuous

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// registrations are the register_when_stable entries of one run's
// resources by type#name, as the engine prepared them (templates
// expanded with the rest of the resource's properties).
type registrations map[string][]resources.Registration

// collect notes p's entries.
func (r registrations) collect(p *engine.Prepared) {
	if rs := p.Properties.Common().RegisterWhenStable; len(rs) > 0 {
		r[p.Ref()] = rs
	}
}

// loadManifest reads and parses a manifest file as any manifest (its
// resources' register_when_stable entries are a common property). Its
// working directory is the file's.
func loadManifest(path string) (*manifest.Manifest, error) {
	data, err := filecheck.ReadBounded(path, manifest.DefaultMaxBytes)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	m, err := manifest.Parse(data, manifest.ParseOptions{WorkingDir: filepath.Dir(abs)})
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	return m, nil
}

// entryOf is the registration entry of a prepared one, checked. An entry
// the engine found reading data marked sensitive (or holding one of its
// values) is refused: the whole fleet reads registrations. The check comes
// first, so that no validation error quotes the value.
func entryOf(r resources.Registration) (*registration.Entry, error) {
	if r.Sensitive {
		return nil, fmt.Errorf("%w: the entry reads data marked sensitive or holds one of its values; it is not published (the fleet reads registrations)", ErrSensitive)
	}
	e := &registration.Entry{
		Cluster: r.Cluster, Service: r.Service, Protocol: r.Protocol, Address: r.Address,
		Port: int(r.Port), Priority: int(r.Priority), TTL: r.TTL, Annotations: r.Annotations,
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
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
// and name Host; in the stream, Host is bound to Signer's key first (see
// registration.BindHost), so that readers know whose key signs Host's
// entries. A name bound to another key publishes nothing.
type StreamRegistrar struct {
	JS     jetstream.JetStream
	Stream string
	Signer *protocol.KeySigner
	Core   bool
	// Host is this host's identity, written into every entry.
	Host string

	mu    sync.Mutex
	bound time.Time
}

// rebind is how often the registrar refreshes its host binding.
const rebind = 30 * time.Second

// bind binds (or refreshes the binding of) Host to Signer's key.
func (r *StreamRegistrar) bind(ctx context.Context) error {
	if r.Host == "" {
		return fmt.Errorf("%w: the registrar has no host identity", registration.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.bound.IsZero() && time.Since(r.bound) < rebind {
		return nil
	}
	if err := registration.BindHost(ctx, r.JS, r.Stream, r.Host, r.Signer); err != nil {
		return err
	}
	r.bound = time.Now()
	return nil
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
	if err := own.Validate(); err != nil {
		return err
	}
	if err := r.bind(ctx); err != nil {
		return err
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
func (w *worker) register(ctx context.Context, regs registrations, rep *manifest.Report, b *bundle) {
	a := w.a
	if a.opts.Registrar == nil || len(regs) == 0 || rep == nil {
		return
	}
	log := a.log.With("manifest", w.src.String())
	for _, ev := range rep.Events {
		entries := regs[ev.Type+"#"+ev.Name]
		if len(entries) == 0 {
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
		for i, raw := range entries {
			e, err := entryOf(raw)
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

// maxLoggedRefusals bounds the refusals registrations() remembers having
// logged.
const maxLoggedRefusals = 10000

// lookupTimeout bounds one registrations() lookup.
const lookupTimeout = 10 * time.Second

// noRegistrationsFunc is registrations() of an agent without NATS.
func noRegistrationsFunc(...any) (any, error) { return nil, ErrNoNATS }

// registrationsFunc is the registrations(cluster, protocol, service,
// address) template function CCM documents: the entries registered now
// signed by the key trust holds for the host each names, "*" matching any
// value in a position. Each entry shows CCM's template keys (Cluster,
// Service, Protocol, Address, Port, Priority, TTL, Annotations) and Host,
// the verified host. An entry refused is logged once per subject and
// reason.
func registrationsFunc(js jetstream.JetStream, stream string, trust *registration.Trust, log *slog.Logger) templates.Function {
	var (
		mu     sync.Mutex
		logged = map[string]bool{}
	)
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
		recs, skipped, err := registration.Query(ctx, js, stream, trust, args[0], args[1], args[2], args[3])
		if err != nil {
			return nil, fmt.Errorf("registrations: %w", err)
		}
		mu.Lock()
		for _, s := range skipped {
			if k := s.Subject + "\x00" + s.Reason; !logged[k] {
				if len(logged) >= maxLoggedRefusals {
					clear(logged)
				}
				logged[k] = true
				log.Warn("registrations: entry refused", "subject", s.Subject, "reason", s.Reason)
			}
		}
		mu.Unlock()
		if len(skipped) > 0 {
			log.Debug("registrations: entries refused", "count", len(skipped), "returned", len(recs))
		}
		out := make([]registration.Entry, len(recs))
		for i, r := range recs {
			out[i] = r.Entry
		}
		return out, nil
	}
}
