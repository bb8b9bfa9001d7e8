package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// nodeRecord is the agent's registry entry as of now.
func (r *registrar) nodeRecord() ([]byte, error) {
	a := r.a
	f := a.facts.current()
	return json.Marshal(&protocol.NodeRecord{
		Protocol:  protocol.NodeProtocol,
		Identity:  a.cfg.Identity,
		Facts:     f.scalar,
		Version:   a.setup.version,
		PublicKey: a.keys.PublicKey(),
		Started:   a.facts.started,
		LastSeen:  a.now().UTC(),
	})
}

// registrar keeps the agent's registry entry: it is put before the agent
// reports ready, again every heartbeat and whenever UpdateFacts is called
// (both in the agent's serve loop), and deleted when the agent stops. The bucket is created with RegistryTTL
// when it does not exist. Failures are logged (once at Warn until the next
// success) and retried at the next heartbeat; they never stop the agent.
type registrar struct {
	a *Agent
	// entry writes this node's entry (nil until the first write);
	// stored is whether one was written, so that there is one to remove
	entry  *jsstore.NodeEntry
	stored bool
	// due is when the entry is to be written again
	due time.Time
	// retry, not 0 while the last write failed, is the wait before the
	// next try: it doubles from registryRetry up to a heartbeat while the
	// failures go on
	retry time.Duration
}

// registryRetry is how soon a failed registry update is first retried,
// and startAttempts how often the first one is tried before the agent
// reports ready.
const (
	registryRetry = time.Second
	startAttempts = 3
)

// start puts the entry before the agent serves, trying a few times within
// HistoryTimeout (a bucket being created by many agents at once may not
// answer the first time) unless JetStream is not there at all.
func (r *registrar) start(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.a.cfg.HistoryTimeout)
	defer cancel()
	for i := range startAttempts {
		err := r.put(ctx)
		if err == nil || errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(i+1) * 100 * time.Millisecond):
		}
	}
}

// put opens the bucket when needed and writes the entry.
func (r *registrar) put(ctx context.Context) error {
	a := r.a
	at := time.Now()
	ctx, cancel := context.WithTimeout(ctx, a.cfg.HistoryTimeout)
	defer cancel()
	err := func() error {
		if r.entry == nil {
			r.entry = jsstore.NewNodeEntry(a.setup.js, jsstore.RegistryConfig{TTL: a.cfg.RegistryTTL}, a.cfg.Identity)
		}
		data, err := r.nodeRecord()
		if err != nil {
			return err
		}
		if err := r.entry.Put(ctx, data); err != nil {
			return err
		}
		r.stored = true
		return nil
	}()
	switch {
	case err != nil && r.retry == 0:
		a.log.Warn("could not update the node registry", "error", err)
	case err != nil:
		a.log.Debug("could not update the node registry", "error", err)
	case r.retry > 0:
		a.log.Info("node registry updated again")
	}
	if err == nil {
		a.fin.stats.heartbeats.Add(1)
		r.retry = 0
	} else {
		r.retry = nextRetry(r.retry, a.cfg.Heartbeat)
	}
	r.due = at.Add(r.wait())
	return err
}

// nextRetry is the retry after prev once one more try failed: double,
// from registryRetry, at most a heartbeat.
func nextRetry(prev, heartbeat time.Duration) time.Duration {
	return min(max(2*prev, registryRetry), heartbeat)
}

// wait is how long after a write the next one is due: a heartbeat, or
// after a failure the backed-off retry, either one spread by a tenth
// either way. Agents started together (a fleet after a broker restart,
// the simulator) would otherwise refresh in step, and during an outage
// or while their brokers are saturated, retry in step every second.
func (r *registrar) wait() time.Duration {
	d := r.a.cfg.Heartbeat
	if r.retry > 0 {
		d = r.retry
	}
	return d - d/10 + rand.N(d/5+1)
}

// next is how long until the entry is due again. The agent's serve loop
// times its refreshes by it: a registrar has no goroutine of its own.
func (r *registrar) next() time.Duration { return max(0, time.Until(r.due)) }

// remove deletes the entry, so a stopped agent leaves the registry at once.
func (r *registrar) remove(ctx context.Context) {
	if !r.stored {
		return
	}
	if !r.a.nc.IsConnected() {
		// Nothing can be deleted now: the entry expires after its TTL.
		r.a.log.Warn("not connected to NATS: this node's registry entry expires after its TTL instead of being removed")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.a.cfg.HistoryTimeout)
	defer cancel()
	if err := r.entry.Delete(ctx); err != nil {
		r.a.log.Warn("could not remove this node from the registry", "error", err)
	}
}

// factSet is the agent's facts, their scalar part and what templates of
// remote requests see (the facts only: no environment, no files), replaced
// as a whole.
type factSet struct {
	all    map[string]any
	scalar map[string]any
	env    *templates.Env
}

// newFactSet is facts with the identity and the site: the configured one,
// else the facts' own, else the broker's (see brokerSite).
func newFactSet(identity, site, brokerSite string, facts map[string]any) *factSet {
	f := make(map[string]any, len(facts)+2)
	maps.Copy(f, facts)
	f["identity"] = identity
	if _, has := f[protocol.SiteFact]; site == "" && !has && brokerSite != "" {
		site = brokerSite
	}
	if site != "" {
		f[protocol.SiteFact] = site
	}
	return &factSet{all: f, scalar: protocol.ScalarFacts(f), env: templates.New(f, nil)}
}

// hostFacts is what the agent knows of its host, and who is woken when
// it changes.
type hostFacts struct {
	facts atomic.Pointer[factSet]
	// source gathers the host's facts again (nil: they are never
	// refreshed, as for simulated agents)
	source FactsSource
	// changed wakes the registrar after UpdateFacts, subjects the loop
	// that moves the subscriptions, assign the assigner to select its
	// assignments again
	changed, subjects, assign chan struct{}
	// started is when Run started
	started time.Time
	// brokerSite is the site of the broker the agent connected to first
	// (see brokerSite)
	brokerSite string
}

func newHostFacts(identity, site, brokerSite string, facts map[string]any) *hostFacts {
	h := &hostFacts{changed: make(chan struct{}, 1), subjects: make(chan struct{}, 1), assign: make(chan struct{}, 1), brokerSite: brokerSite}
	h.facts.Store(newFactSet(identity, site, brokerSite, facts))
	return h
}

// brokerSite is the site a broker's JetStream domain names: a site broker
// runs the site's name as its domain, a hub its own (hub by default). It
// is the host's site when neither the configuration nor the facts give
// one; "" when the broker has no domain or it is no site name.
func brokerSite(nc *nats.Conn) string {
	d := nc.ConnectedDomain()
	if d == "" || protocol.ValidateSite(d) != nil {
		return ""
	}
	return d
}

// current returns the facts in use.
func (h *hostFacts) current() *factSet { return h.facts.Load() }

// UpdateFacts replaces the agent's facts (the identity and the configured
// site are kept): filters
// and templates of later requests see the new facts, the registry entry is
// refreshed at once, and when a subject fact changed the agent moves its
// subscriptions to the new subjects.
func (a *Agent) UpdateFacts(facts map[string]any) {
	a.facts.facts.Store(newFactSet(a.cfg.Identity, a.cfg.Site, a.facts.brokerSite, facts))
	for _, c := range []chan struct{}{a.facts.changed, a.facts.subjects, a.facts.assign} {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// RefreshFacts gathers the facts again with the agent's FactsSource and
// puts them in force (see UpdateFacts). Without a source it does nothing.
func (a *Agent) RefreshFacts(ctx context.Context) error {
	if a.facts.source == nil {
		return nil
	}
	facts, err := a.facts.source(ctx)
	if err != nil {
		return fmt.Errorf("agent %s: facts: %w", a.cfg.Identity, err)
	}
	a.UpdateFacts(facts)
	return nil
}
