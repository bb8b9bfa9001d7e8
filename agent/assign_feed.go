package agent

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// A KV watcher is one ordered consumer per agent, and on a broker cluster
// every consumer is created through the cluster's meta layer: 20,000 agents
// starting at once did not all get theirs in ten minutes. An assignment
// bucket provisioned with the fleet's republish (jsstore) instead sends
// every stored change to protocol.AssignmentChangesPrefix, from the
// stream's leader, once stored; the feed follows that subject with a plain
// subscription and reads the current values with direct gets, so an agent
// costs the broker no consumer at all.
//
// Core NATS delivers at most once, so the feed reads the whole bucket
// again (a resync) when it starts, when the connection comes back, when
// its own buffer overflowed, and when a periodic look at the stream's last
// sequence shows a change it never saw.

const (
	// feedBuffer bounds the changes waiting for the assigner; one more is
	// dropped and answered with a resync.
	feedBuffer = 64
	// feedCheckInterval is how often the feed compares the stream's last
	// sequence with what it has seen (plus up to a fifth of splay, so a
	// fleet does not ask at once).
	feedCheckInterval = 5 * time.Minute
)

// assignmentUpdates is what the assigner reads changes from: a KV watcher
// or the feed (current values first, a nil entry, then changes).
type assignmentUpdates interface {
	Updates() <-chan jetstream.KeyValueEntry
	Stop() error
}

// feedEnabled tells whether the bucket behind info republishes its changes
// where the feed listens.
func feedEnabled(info *jetstream.StreamInfo) bool {
	rp := info.Config.RePublish
	return rp != nil && !rp.HeadersOnly && rp.Destination == protocol.AssignmentChangeSubjects
}

// assignFeed follows the assignment bucket through its republished changes.
// One goroutine (run) owns seen and dropped and sends on updates; the
// subscription delivers into msgs (a channel subscription: no goroutine of
// its own), and NATS counts what it dropped when msgs was full.
type assignFeed struct {
	sub  *nats.Subscription
	msgs chan *nats.Msg
	// dropped is how many changes the subscription had dropped when run
	// last looked
	dropped int
	status  chan nats.Status
	nc      *nats.Conn
	updates chan jetstream.KeyValueEntry
	// seen is the revision of each key last delivered; last the highest
	// stream sequence the feed knows to be covered
	seen map[string]uint64
	last uint64
	// reads counts the whole-bucket reads (the first one included)
	reads atomic.Int64
	// checkEvery is feedCheckInterval (shorter in tests)
	checkEvery time.Duration
	log        *slog.Logger
	stop       context.CancelFunc
	done       chan struct{}
	started    bool
	once       sync.Once
}

// startFeed subscribes to the changes and starts the feed's goroutine,
// which reads the bucket and delivers it, then follows the changes.
func startFeed(ctx context.Context, nc *nats.Conn, log *slog.Logger) (*assignFeed, error) {
	f, err := newFeed(nc, log)
	if err != nil {
		return nil, err
	}
	f.start(ctx)
	return f, nil
}

// newFeed subscribes to the changes; start runs the feed.
func newFeed(nc *nats.Conn, log *slog.Logger) (*assignFeed, error) {
	f := &assignFeed{
		msgs:       make(chan *nats.Msg, feedBuffer),
		nc:         nc,
		updates:    make(chan jetstream.KeyValueEntry, feedBuffer),
		seen:       map[string]uint64{},
		checkEvery: feedCheckInterval,
		log:        log,
		done:       make(chan struct{}),
		stop:       func() {},
	}
	sub, err := nc.ChanSubscribe(protocol.AssignmentChangeSubjects, f.msgs)
	if err != nil {
		return nil, fmt.Errorf("assignment changes: %w", err)
	}
	// The subscription must be on the server before the first read, or a
	// change stored in between is neither read nor delivered.
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("assignment changes: %w", err)
	}
	f.sub = sub
	f.status = nc.StatusChanged(nats.CONNECTED)
	return f, nil
}

// start runs the feed in its own goroutine until ctx ends or Stop.
func (f *assignFeed) start(ctx context.Context) {
	ctx, f.stop = context.WithCancel(ctx)
	f.started = true
	go f.run(ctx)
}

// Updates delivers the bucket's entries: every key's current one, a nil
// entry, then each change.
func (f *assignFeed) Updates() <-chan jetstream.KeyValueEntry { return f.updates }

// Stop ends the feed and waits for its goroutine (when it was started).
func (f *assignFeed) Stop() error {
	f.once.Do(func() {
		f.stop()
		if f.started {
			<-f.done
		}
		_ = f.sub.Unsubscribe()
		f.nc.RemoveStatusListener(f.status)
	})
	return nil
}

func (f *assignFeed) run(ctx context.Context) {
	defer close(f.done)
	defer close(f.updates)
	if !f.resyncUntilDone(ctx) {
		return
	}
	if !f.send(ctx, nil) {
		return
	}
	check := time.NewTimer(splayed(f.checkEvery))
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-f.msgs:
			if !f.change(ctx, m) {
				return
			}
		case <-f.status:
			f.log.Debug("reconnected: reading the assignment store again")
			if !f.resyncUntilDone(ctx) {
				return
			}
		case <-check.C:
			if !f.check(ctx) {
				return
			}
			check.Reset(splayed(f.checkEvery))
		}
		if f.lost() {
			f.log.Warn("assignment changes arrived faster than they were taken: reading the store again")
			if !f.resyncUntilDone(ctx) {
				return
			}
		}
	}
}

// lost tells whether the subscription dropped changes since the last look
// (its buffer was full).
func (f *assignFeed) lost() bool {
	n, err := f.sub.Dropped()
	if err != nil || n <= f.dropped {
		return false
	}
	f.dropped = n
	return true
}

// splayed is d plus up to a fifth of it, at random.
func splayed(d time.Duration) time.Duration {
	return d + rand.N(d/5+1)
}

// check looks up the stream's last message (a direct get: no JetStream
// API request) and resyncs when it is past what the feed has seen; false
// when ctx ended.
func (f *assignFeed) check(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, feedRequestTimeout)
	defer cancel()
	msgs, err := f.direct(rctx, directRequest{LastBySubject: assignmentSubjects})
	if err != nil || len(msgs) != 1 {
		f.log.Debug("cannot read the assignment stream's last change", "error", err)
		return ctx.Err() == nil
	}
	if e, ok := stored(msgs[0]); ok && e.rev <= f.last {
		return true
	}
	return f.resyncUntilDone(ctx)
}

// resyncUntilDone reads the bucket again until it succeeds, waiting
// feedRetry after the first failure and twice as long after each next one
// (at most feedRetryMax, with a fifth of splay: a fleet that failed
// together must not retry together); false when ctx ended first.
func (f *assignFeed) resyncUntilDone(ctx context.Context) bool {
	wait := feedRetry
	for {
		err := f.resync(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		f.log.Warn("cannot read the assignment store; trying again", "error", err, "retry", wait)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(splayed(wait)):
		}
		wait = min(2*wait, feedRetryMax)
	}
}

// feedRetry is how long the feed first waits before reading again a store
// it could not read, feedRetryMax the longest; feedRequestTimeout bounds
// one read.
var (
	feedRetry          = 2 * time.Second
	feedRetryMax       = time.Minute
	feedRequestTimeout = 10 * time.Second
)

// assignmentSubjects are the subjects of every key of the bucket.
const assignmentSubjects = "$KV." + protocol.AssignmentsBucket + ".>"

// resync reads the last entry of every key (one direct get, answered by
// any of the stream's servers) and delivers each that is newer than what
// was delivered, in revision order.
func (f *assignFeed) resync(ctx context.Context) error {
	f.reads.Add(1)
	rctx, cancel := context.WithTimeout(ctx, feedRequestTimeout)
	defer cancel()
	entries, upTo, err := f.readAll(rctx)
	if err != nil {
		return err
	}
	slices.SortFunc(entries, func(a, b *feedEntry) int { return cmp.Compare(a.rev, b.rev) })
	for _, e := range entries {
		if e.rev <= f.seen[e.key] {
			continue
		}
		if !f.deliver(ctx, e) {
			return ctx.Err()
		}
	}
	f.last = max(f.last, upTo)
	return nil
}

// change delivers one republished change unless the feed already has it or
// a later one; false when ctx ended.
func (f *assignFeed) change(ctx context.Context, m *nats.Msg) bool {
	e, ok := stored(m)
	if !ok {
		f.log.Warn("ignored a message on the assignment change subject that the store did not send", "subject", m.Subject)
		return true
	}
	if e.rev <= f.seen[e.key] {
		return true
	}
	return f.deliver(ctx, e)
}

// deliver hands e to the assigner and remembers it; false when ctx ended.
func (f *assignFeed) deliver(ctx context.Context, e *feedEntry) bool {
	f.seen[e.key] = e.rev
	f.last = max(f.last, e.rev)
	return f.send(ctx, e)
}

func (f *assignFeed) send(ctx context.Context, e jetstream.KeyValueEntry) bool {
	select {
	case f.updates <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// takeDelivered takes every update updates already holds.
func (s *assigner) takeDelivered(updates <-chan jetstream.KeyValueEntry) {
	for {
		select {
		case e, ok := <-updates:
			if !ok {
				return
			}
			if e != nil {
				s.update(e)
			}
		default:
			return
		}
	}
}
