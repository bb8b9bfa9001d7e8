package continuous

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/sources"
	"github.com/ccm-fleet/ccm/trust/policy"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// Backoff bounds of a failed apply of a change.
const (
	minRetry = time.Second
	maxRetry = 5 * time.Minute
)

// DecisionStale: a signed bundle older than one already applied from the
// same source (a replay of an earlier version).
const DecisionStale = "stale"

// bundle is a verified, unpacked remote bundle.
type bundle struct {
	m      *manifest.Manifest
	dir    string
	digest string
	// signer is the policy's signer of the bundle, nil for a bundle
	// vouched for by a pinned checksum.
	signer *policy.Signer
	sig    *sources.Signature
	// regRefused are the services the signer may not register, audited.
	regRefused map[string]bool
	// audited says the accepted line was written.
	audited bool
	// refusedAudited says a refusal at apply was written.
	refusedAudited bool
}

// auditSigner names b's signer as audit lines do: the signature's key,
// and the policy's name for it once verified.
func (b *bundle) auditSigner() AuditSigner {
	var s AuditSigner
	if b.sig != nil {
		s.Key = b.sig.Signer
	}
	if b.signer != nil {
		s.Name = b.signer.Name
	}
	return s
}

// worker keeps one manifest source: the bundle it applies now and the
// next one its watch found.
type worker struct {
	a      *Agent
	src    *sources.Source
	queued atomic.Bool

	// guards pending
	mu      sync.Mutex
	pending *bundle

	// Owned by the goroutine fetching (Run's before the watch starts,
	// then the watch's).
	lastSeen  string
	highWater HighWater

	// Owned by Run's goroutine.
	// localRegRefused are the services this source's own manifest may
	// not register, audited once each.
	localRegRefused map[string]bool
	current         *bundle
	lastApply       time.Time
	failures        int
}

func newWorker(a *Agent, src *sources.Source) *worker {
	w := &worker{a: a, src: src}
	if src.Remote() {
		w.highWater = w.readHighWater()
	}
	return w
}

// highWaterPath keeps the newest signed bundle taken from the source, so
// a restart does not accept an older one again.
func (w *worker) highWaterPath() string {
	return HighWaterPath(w.a.cfg.CacheDir, w.src)
}

// readHighWater reads the kept mark; zero when there is none.
func (w *worker) readHighWater() HighWater {
	return ReadHighWater(w.a.cfg.CacheDir, w.src)
}

// keepHighWater records h; a failure is logged (the mark still holds
// until the agent restarts).
func (w *worker) keepHighWater(h HighWater) {
	w.highWater = h
	if err := KeepHighWater(w.a.cfg.CacheDir, w.src, h); err != nil {
		w.a.log.Error("could not keep the newest bundle's time: a restart would accept an older signed bundle again", "manifest", w.src.String(), "path", w.highWaterPath())
	}
}

// HighWater is the newest signed bundle taken from a source: when it was
// signed and its SHA-256. A bundle signed before it is a replay; the same
// bundle read again (after a restart, say) is not.
type HighWater struct {
	Created time.Time
	// SHA256 is empty in a mark kept by an earlier release, which kept
	// the time alone.
	SHA256 string
}

// Refuses reports whether a bundle signed at created with digest sha256
// may not be taken after h: signed before it, or signed at the same
// instant but another bundle.
func (h HighWater) Refuses(created time.Time, sha256 string) bool {
	if created.Before(h.Created) {
		return true
	}
	return created.Equal(h.Created) && h.SHA256 != "" && sha256 != h.SHA256
}

// HighWaterPath is the file below cacheDir keeping the newest signed
// bundle taken from src (by the agent or by "ccm-agent apply").
func HighWaterPath(cacheDir string, src *sources.Source) string {
	return filepath.Join(cacheDir, src.CacheName()+".taken")
}

// ReadHighWater reads the kept mark ("TIME SHA256", or "TIME" as an
// earlier release kept it); zero when there is none or it does not parse.
func ReadHighWater(cacheDir string, src *sources.Source) HighWater {
	b, err := os.ReadFile(HighWaterPath(cacheDir, src))
	if err != nil || len(b) > 160 {
		return HighWater{}
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 || len(fields) > 2 {
		return HighWater{}
	}
	t, err := time.Parse(time.RFC3339Nano, fields[0])
	if err != nil {
		return HighWater{}
	}
	h := HighWater{Created: t}
	if len(fields) == 2 {
		h.SHA256 = fields[1]
	}
	return h
}

// KeepHighWater records h as the newest signed bundle taken from src,
// replacing the file whole.
func KeepHighWater(cacheDir string, src *sources.Source, h HighWater) error {
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return err
	}
	p := HighWaterPath(cacheDir, src)
	tmp := p + ".tmp"
	line := strings.TrimSpace(h.Created.UTC().Format(time.RFC3339Nano) + " " + h.SHA256)
	if err := os.WriteFile(tmp, []byte(line+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// takePending makes the bundle the watch found the current one.
func (w *worker) takePending() {
	w.mu.Lock()
	p := w.pending
	w.pending = nil
	w.mu.Unlock()
	if p == nil {
		return
	}
	if old := w.current; old != nil && old.dir != p.dir {
		_ = os.RemoveAll(old.dir)
	}
	w.current = p
	w.failures = 0
}

// apply runs the source's manifest (only its health checks with hcOnly)
// and returns how many health checks were CRITICAL. A scheduled apply
// (not force) is skipped when the last one was less than MinInterval ago.
func (w *worker) apply(ctx context.Context, hcOnly, force bool, trigger string) int {
	a := w.a
	log := a.log.With("manifest", w.src.String())
	if !force && !hcOnly && !w.lastApply.IsZero() && time.Since(w.lastApply) < MinInterval {
		log.Debug("skipping the scheduled apply: the last one was less than the minimum interval ago", "min", MinInterval)
		return 0
	}
	var (
		m    *manifest.Manifest
		regs = registrations{}
		b    = w.current
	)
	if w.src.Kind == sources.KindFile {
		var err error
		if m, err = loadManifest(w.src.Path); err != nil {
			log.Error("could not load the manifest", "error", err)
			return 0
		}
		b = nil
	} else {
		if b == nil {
			log.Debug("no bundle fetched yet")
			return 0
		}
		m = b.m
	}
	opts := ApplyOptions{MonitorOnly: hcOnly, Facts: a.facts, Data: a.extData, Source: w.src.String(), TemplateOptions: a.localTmplOpts, Prepared: regs.collect, Trigger: trigger}
	if b != nil {
		opts.Version = b.digest
		opts.Signer = b.auditSigner()
	} else {
		opts.Version = sources.Digest(m.Document())
	}
	if b != nil && b.signer != nil {
		opts.TemplateOptions = a.tmplOpts
	}
	var refusal *scope.Decision
	if b != nil && b.signer != nil {
		s := b.signer
		if d, refused := policy.FirstRefusal(s.CheckRequest(false, a.facts)); refused {
			w.refused(b, DecisionForbidden, s.RefusalMessage("", d), &d)
			return 0
		}
		opts.Guard = func(p *engine.Prepared) error {
			if d, refused := policy.FirstRefusal(s.Arm(p, a.resolver)); refused {
				refusal = &d
				return fmt.Errorf("%w: %s", ErrRefused, s.RefusalMessage(p.Type.Name()+"#"+p.Name(), d))
			}
			return nil
		}
	}
	if !hcOnly {
		w.lastApply = time.Now()
	}
	start := time.Now()
	rep, err := a.opts.Applier.Apply(ctx, m, opts)
	took := time.Since(start)
	if mt := a.opts.Metrics; mt != nil {
		if !hcOnly {
			mt.applyDuration.WithLabelValues(w.src.String()).Observe(took.Seconds())
		}
		mt.observeReport(w.src.String(), rep, took)
	}
	if err != nil {
		if refusal != nil {
			w.refused(b, DecisionForbidden, err.Error(), refusal)
			return 0
		}
		log.Error("could not run the manifest", "health_checks_only", hcOnly, "error", err)
		if !hcOnly {
			w.retry(log)
		}
		return 0
	}
	w.register(ctx, regs, rep, b)
	if b != nil && !b.audited && !hcOnly {
		b.audited = true
		a.audit(w.record(b, DecisionApplied, "", rep))
	}
	critical := 0
	for _, ev := range rep.Events {
		for _, hc := range ev.HealthChecks {
			if hc.Status == protocol.HealthCritical {
				critical++
			}
		}
	}
	if hcOnly {
		return critical
	}
	log.Info("applied the manifest", "total", rep.Summary.Total, "changed", rep.Summary.Changed, "failed", rep.Summary.Failed, "duration", took.Round(time.Millisecond))
	if rep.Summary.Failed > 0 {
		w.retry(log)
	} else {
		w.failures = 0
		a.cancelRetry(w)
	}
	return critical
}

// retry schedules another apply after an exponentially growing delay.
func (w *worker) retry(log interface{ Warn(string, ...any) }) {
	d := minRetry << min(w.failures, 16)
	d = min(d, maxRetry, w.a.cfg.IntervalDuration())
	w.failures++
	log.Warn("the apply failed: trying again", "in", d)
	w.a.retryLater(w, d)
}

// refused audits (once per bundle) and logs a bundle the policy refused
// at apply.
func (w *worker) refused(b *bundle, decision, msg string, d *scope.Decision) {
	w.a.log.Error("bundle refused by the policy", "manifest", w.src.String(), "reason", msg)
	if mt := w.a.opts.Metrics; mt != nil {
		mt.refusedBundles.WithLabelValues(w.src.String()).Inc()
	}
	if b.refusedAudited {
		return
	}
	b.refusedAudited = true
	rec := w.record(b, decision, msg, nil)
	if d != nil {
		rec.Rule, rec.Value = d.Rule, d.Value
	}
	w.a.audit(rec)
}

// record starts an audit line about b.
func (w *worker) record(b *bundle, decision, msg string, rep *manifest.Report) *AuditRecord {
	rec := &AuditRecord{RequestID: b.digest, Subject: w.src.String(), Decision: decision, Message: msg, Signer: b.auditSigner()}
	if rep != nil {
		for _, ev := range rep.Events {
			rec.Resources = append(rec.Resources, ev.Type+"#"+ev.Name)
		}
	}
	return rec
}

// watch fetches the source every poll interval, and for obj:// also on
// every change the object store reports, until ctx ends. A fetch that
// fails is tried again with exponential backoff up to the poll interval.
func (w *worker) watch(ctx context.Context) {
	poll := w.a.opts.PollInterval
	var (
		updates <-chan jetstream.ObjectInfo
		stop    func()
	)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	failures := 0
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		// A change made before a new watch started is caught by a poll
		// at once.
		pollNow := false
		if updates == nil && w.src.Kind == sources.KindObject {
			updates, stop = w.watchObject(ctx)
			pollNow = updates != nil
			w.a.log.Debug("watching the object store", "manifest", w.src.String(), "watching", pollNow)
		}
		if !pollNow {
			if !w.waitChange(ctx, timer.C, &updates, &stop) {
				if ctx.Err() != nil {
					return
				}
				continue
			}
		}
		next := poll
		if fresh, err := w.poll(ctx); err != nil {
			next = min(minRetry<<min(failures, 16), poll)
			failures++
		} else {
			failures = 0
			if fresh {
				w.a.enqueue(w)
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// waitChange waits for the poll timer or a change of the source's object;
// false when ctx ended, the watch closed or another object changed.
func (w *worker) waitChange(ctx context.Context, tick <-chan time.Time, updates *<-chan jetstream.ObjectInfo, stop *func()) bool {
	select {
	case <-ctx.Done():
		return false
	case <-tick:
		return true
	case info, ok := <-*updates:
		if !ok {
			(*stop)()
			*updates, *stop = nil, nil
			if ctx.Err() == nil {
				// Not a missed heartbeat, which nats.go mends by itself:
				// the watch's subscription is gone.
				w.a.log.Warn("the object store watch stopped: watching it again, polling meanwhile", "manifest", w.src.String())
			}
			return false
		}
		w.a.log.Debug("object store change", "manifest", w.src.String(), "object", info.Name, "deleted", info.Deleted)
		return info.Name == w.src.Key
	}
}

// watchObject watches the source's bucket; nil when it cannot (the poll
// goes on, and the watch is tried again after the next poll).
func (w *worker) watchObject(ctx context.Context) (<-chan jetstream.ObjectInfo, func()) {
	js := w.a.opts.JS
	if js == nil {
		return nil, nil
	}
	obs, err := js.ObjectStore(ctx, w.src.Bucket)
	if err != nil {
		w.a.log.Debug("cannot watch the object store yet", "manifest", w.src.String(), "error", err)
		return nil, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	watcher, err := obs.Watch(wctx, jetstream.UpdatesOnly())
	if err != nil {
		cancel()
		w.a.log.Warn("cannot watch the object store: polling only until the next try", "manifest", w.src.String(), "error", err)
		return nil, nil
	}
	out := make(chan jetstream.ObjectInfo, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for {
			var info *jetstream.ObjectInfo
			select {
			case <-wctx.Done():
				return
			case i, ok := <-watcher.Updates():
				if !ok {
					return
				}
				info = i
			}
			if info == nil {
				continue
			}
			select {
			case out <- *info:
			case <-wctx.Done():
				return
			}
		}
	}()
	return out, func() {
		cancel()
		_ = watcher.Stop()
		<-done
	}
}

// poll fetches the bundle; a new one that verifies is unpacked and made
// pending (fresh is true), for Run to take. A refused one is audited once.
func (w *worker) poll(ctx context.Context) (fresh bool, err error) {
	a := w.a
	name := w.src.String()
	if mt := a.opts.Metrics; mt != nil {
		mt.fetches.WithLabelValues(name).Inc()
	}
	f, err := a.fetcher.Fetch(ctx, w.src)
	if err != nil {
		if mt := a.opts.Metrics; mt != nil {
			mt.fetchErrors.WithLabelValues(name).Inc()
		}
		if ctx.Err() == nil {
			a.log.Warn("could not fetch the manifest bundle", "manifest", name, "error", err)
		}
		return false, err
	}
	if f.SHA256 == w.lastSeen {
		a.log.Debug("manifest bundle unchanged", "manifest", name, "sha256", f.SHA256)
		return false, nil
	}
	w.lastSeen = f.SHA256
	b := &bundle{digest: f.SHA256, sig: f.Signature}
	signer, decision, err := w.verify(f)
	if err != nil {
		a.log.Error("bundle refused", "manifest", name, "sha256", f.SHA256, "error", err)
		if mt := a.opts.Metrics; mt != nil {
			mt.refusedBundles.WithLabelValues(name).Inc()
		}
		a.audit(w.record(b, decision, err.Error(), nil))
		return false, nil
	}
	b.signer = signer
	if err := os.MkdirAll(a.cfg.CacheDir, 0o700); err != nil {
		return false, fmt.Errorf("cache_dir %s: %w", a.cfg.CacheDir, err)
	}
	b.dir = filepath.Join(a.cfg.CacheDir, w.src.CacheName()+"-"+f.SHA256[:16])
	if err := os.RemoveAll(b.dir); err != nil {
		return false, fmt.Errorf("%s: %w", b.dir, err)
	}
	if err := sources.Unpack(f.Data, b.dir); err != nil {
		a.log.Error("could not unpack the bundle", "manifest", name, "error", err)
		return false, nil
	}
	m, err := loadManifest(filepath.Join(b.dir, sources.ManifestFile))
	if err != nil {
		_ = os.RemoveAll(b.dir)
		a.log.Error("the bundle's manifest is invalid", "manifest", name, "error", err)
		return false, nil
	}
	b.m = m
	if f.Signature != nil {
		w.keepHighWater(HighWater{Created: f.Signature.Created, SHA256: f.SHA256})
	}
	w.mu.Lock()
	if old := w.pending; old != nil {
		_ = os.RemoveAll(old.dir)
	}
	w.pending = b
	w.mu.Unlock()
	a.log.Info("new manifest bundle", "manifest", name, "sha256", f.SHA256)
	return true, nil
}

// verify decides whether a fetched bundle may be applied (see
// VerifyBundle), newer than the last bundle taken from this source.
func (w *worker) verify(f *sources.Fetched) (*policy.Signer, string, error) {
	return VerifyBundle(w.src, f, w.a.opts.Policy, w.highWater)
}

// VerifyBundle decides whether a bundle fetched from src may be applied:
// a checksum pinned in the source must match; then either the pin alone
// vouches for an unsigned bundle, or the signature must verify for the
// source's location, name a signer pol trusts and not be refused by
// highWater (see HighWater.Refuses). It returns the signer (nil when the pin
// vouches) or the audit decision and an error wrapping ErrRefused (and
// sources.ErrChecksum, ErrUnsigned or ErrBadSignature where they apply).
func VerifyBundle(src *sources.Source, f *sources.Fetched, pol *policy.Policy, highWater HighWater) (*policy.Signer, string, error) {
	if pin := src.SHA256; pin != "" && f.SHA256 != pin {
		return nil, DecisionUnauthenticated, fmt.Errorf("%w: %w: sha256 %s, pinned %s", ErrRefused, sources.ErrChecksum, f.SHA256, pin)
	}
	if f.Signature == nil {
		if src.SHA256 != "" {
			return nil, "", nil
		}
		return nil, DecisionUnauthenticated, fmt.Errorf("%w: %w: remote bundles are applied only when signed by a key the policy trusts or pinned by a checksum", ErrRefused, f.SignatureErr)
	}
	sig := f.Signature
	if err := sig.Verify(f.Data, src.Location()); err != nil {
		return nil, DecisionUnauthenticated, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	s, ok := pol.SignerByKey(sig.Signer)
	if !ok {
		return nil, DecisionUnauthenticated, fmt.Errorf("%w: signer %s is not trusted by this agent's policy", ErrRefused, sig.Signer)
	}
	if highWater.Refuses(sig.Created, f.SHA256) {
		return nil, DecisionStale, fmt.Errorf("%w: signed at %s, before the bundle already taken (%s) or another bundle signed at the same time", ErrRefused, sig.Created.Format(time.RFC3339Nano), highWater.Created.Format(time.RFC3339Nano))
	}
	return s, "", nil
}
