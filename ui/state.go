package ui

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// maxNodeBytes bounds one registry entry read.
const maxNodeBytes = 1 << 20

// MaxNodes bounds the hosts the dashboard keeps from the registry.
const MaxNodes = 100000

// fleet is the dashboard's view of the registry and history, fed by the
// followers and read by the pages.
type fleet struct {
	log   *slog.Logger
	index *orchestrator.HistoryIndex
	// runs holds the latest run of each assignment on each host, for
	// the status the assignments pages show (see assignments.go).
	runs *orchestrator.AssignmentRuns

	mu    sync.RWMutex
	nodes map[string]*protocol.NodeRecord
	// ttl is the registry bucket's TTL: an entry refreshed longer than
	// half of it ago is stale.
	ttl time.Duration
	// version counts registry changes.
	version uint64
	// historyErr and registryErr say why a follower is not running.
	historyErr, registryErr string
	// assignments are the entries of the assignments bucket by name;
	// assignVersion counts their changes, assignErr says why they are
	// not followed.
	assignments   map[string]orchestrator.AssignmentEntry
	assignVersion uint64
	assignErr     string

	changed chan struct{}
}

func newFleet(log *slog.Logger, maxRuns int) *fleet {
	return &fleet{
		log:         log,
		index:       orchestrator.NewHistoryIndex(maxRuns),
		runs:        orchestrator.NewAssignmentRuns(),
		nodes:       map[string]*protocol.NodeRecord{},
		assignments: map[string]orchestrator.AssignmentEntry{},
		changed:     make(chan struct{}, 1),
	}
}

// notify tells the live hub something changed, without blocking.
func (f *fleet) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// followHistory feeds the history index until ctx ends, starting again
// after a failure (a missing stream, a lost connection).
func (f *fleet) followHistory(ctx context.Context, js jetstream.JetStream) {
	retry(ctx, func() error {
		err := jsstore.Follow(ctx, js, func(r jsstore.Record) error {
			id := f.index.Add(r)
			if f.runs.Add(r) || id != "" {
				f.notify()
			}
			if id != "" && r.Identity == "" {
				f.notifyAtDeadline(ctx, id)
			}
			return nil
		})
		f.setErr(&f.historyErr, err)
		return err
	})
}

// notifyAtDeadline tells the pages again when run id stops waiting for
// its hosts, should that be later: the hosts not heard from then show as
// no reply instead of waiting, though no record arrived.
func (f *fleet) notifyAtDeadline(ctx context.Context, id string) {
	run := f.index.Run(id)
	if run == nil {
		return
	}
	wait := time.Until(replyDeadline(run.Request.Created, time.Duration(run.Request.Timeout)))
	if wait <= 0 || len(run.Result.NoReply) == 0 {
		return
	}
	t := time.AfterFunc(wait, f.notify)
	context.AfterFunc(ctx, func() { t.Stop() })
}

// followRegistry keeps nodes in step with the registry until ctx ends.
func (f *fleet) followRegistry(ctx context.Context, js jetstream.JetStream) {
	retry(ctx, func() error {
		err := f.watchRegistry(ctx, js)
		f.setErr(&f.registryErr, err)
		return err
	})
}

func (f *fleet) watchRegistry(ctx context.Context, js jetstream.JetStream) error {
	kv, err := jsstore.LookupRegistry(ctx, js)
	if err != nil {
		return err
	}
	if st, err := kv.Status(ctx); err == nil {
		f.mu.Lock()
		f.ttl = st.TTL()
		f.mu.Unlock()
	}
	return followKV(ctx, kv, "node registry", f.applyEntry)
}

// followKV hands every entry of kv, its current ones first, then each
// change, to apply until ctx ends (nil) or the watch fails (an error
// naming what was followed).
func followKV(ctx context.Context, kv jetstream.KeyValue, what string, apply func(jetstream.KeyValueEntry)) error {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("%s: the watch ended", what)
			}
			if e != nil { // nil marks the end of the current values
				apply(e)
			}
		}
	}
}

// applyEntry takes one registry change.
func (f *fleet) applyEntry(e jetstream.KeyValueEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch e.Operation() {
	case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
		delete(f.nodes, e.Key()) // agents put their entry under their identity
	default:
		rec, err := protocol.DecodeNodeRecord(e.Value(), protocol.Limits{MaxBytes: maxNodeBytes})
		if err != nil {
			f.log.Warn("ignored a malformed node registry entry", "key", e.Key(), "error", err)
			return
		}
		if _, known := f.nodes[rec.Identity]; !known && len(f.nodes) >= MaxNodes {
			return
		}
		f.nodes[rec.Identity] = rec
	}
	f.version++
	f.notify()
}

func (f *fleet) setErr(dst *string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		*dst = ""
	} else {
		*dst = err.Error()
	}
}

// retry runs fn until ctx ends, waiting a little longer after each
// failure (up to 10s).
func retry(ctx context.Context, fn func() error) {
	wait := 250 * time.Millisecond
	for ctx.Err() == nil {
		if err := fn(); err == nil && ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// nodeList returns the hosts sorted by identity.
func (f *fleet) nodeList() []*protocol.NodeRecord {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*protocol.NodeRecord, 0, len(f.nodes))
	for _, n := range f.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *protocol.NodeRecord) int {
		switch {
		case a.Identity < b.Identity:
			return -1
		case a.Identity > b.Identity:
			return 1
		}
		return 0
	})
	return out
}

func (f *fleet) node(id string) *protocol.NodeRecord {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.nodes[id]
}

// stale says whether a registry entry was last refreshed longer ago than
// half the bucket's TTL (its agent cannot write to it, or is gone).
func (f *fleet) stale(n *protocol.NodeRecord, now time.Time) bool {
	f.mu.RLock()
	ttl := f.ttl
	f.mu.RUnlock()
	if ttl <= 0 {
		ttl = 90 * time.Second
	}
	return now.Sub(n.LastSeen) > ttl/2
}

// version changes whenever the registry or the history changed.
func (f *fleet) stamp() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.version + f.assignVersion + f.index.Version() + f.runs.Version()
}

// problems says which followers are not running, and why.
func (f *fleet) problems() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []string
	if f.registryErr != "" {
		out = append(out, "registry: "+f.registryErr)
	}
	if f.historyErr != "" {
		out = append(out, "history: "+f.historyErr)
	}
	return out
}
