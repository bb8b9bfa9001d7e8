package agent

import (
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
)

// dispatcher is the one goroutine that takes every message of the agent's
// subscriptions, in arrival order, and hands it to admission.
type dispatcher struct {
	// request admits a fleet request, discovery answers a discovery
	// request, overflow answers busy a request that found the backlog full
	request, discovery, overflow func(*nats.Msg)
	stats                        *Stats
	metrics                      *Metrics
	log                          *slog.Logger
}

// Admission bounds. A burst is taken off the subscription at once and
// waits in the agent's backlog, where every request is admitted in turn
// and answered (run, busy or refused); only past the backlog's bounds is a
// request answered busy without its checks.
const (
	// subscriptionBuffer is how many received messages the subscriptions
	// hold for the dispatcher; beyond it NATS drops them (a slow
	// consumer). The dispatcher empties it between two admissions.
	subscriptionBuffer = 1024
	// maxBacklog and maxBacklogBytes bound the messages waiting for
	// admission.
	maxBacklog      = 100000
	maxBacklogBytes = 64 << 20
	// dropCheckInterval is how long after the subscriptions' buffer was
	// seen full they are asked how many messages NATS dropped; each
	// subject that lost some is logged once per interval.
	dropCheckInterval = 5 * time.Second
)

// run admits each message on msgs in arrival order: requests through
// request, the discovery subjects through discovery. Between two
// admissions it moves whatever arrived into its backlog, so a burst never
// fills the subscription. When stop is closed it handles what msgs and the
// backlog hold and returns.
func (d *dispatcher) run(msgs chan *nats.Msg, subs *subscriptions, stop chan struct{}) {
	var backlog []*nats.Msg
	backlogBytes := 0
	drops := newDropCheck(d, subs)
	defer drops.stop()
	take := func(m *nats.Msg) {
		drops.took(msgs)
		if len(backlog) >= maxBacklog || backlogBytes+len(m.Data) > maxBacklogBytes {
			d.overflow(m)
			return
		}
		backlog = append(backlog, m)
		backlogBytes += len(m.Data)
	}
	stopping := false
	for {
	drain:
		for {
			select {
			case m := <-msgs:
				take(m)
			default:
				break drain
			}
		}
		if len(backlog) == 0 {
			if stopping {
				return
			}
			if cap(backlog) > subscriptionBuffer {
				backlog = nil // a burst's array is not kept
			}
			select {
			case m := <-msgs:
				take(m)
			case <-drops.due:
				drops.count()
			case <-stop:
				stopping = true
			}
			continue
		}
		m := backlog[0]
		backlog[0] = nil
		backlog = backlog[1:]
		backlogBytes -= len(m.Data)
		d.handle(m)
		select {
		case <-drops.due:
			drops.count()
		default:
		}
	}
}

// dropCheck asks the subscriptions for the messages NATS dropped only
// when some may have been. NATS drops a message for them only when msgs
// is full, and only the dispatcher takes from msgs: after a drop, msgs is
// still full (or one short, if a message arrived since) when the
// dispatcher next takes one. So a take that finds msgs that full makes a
// check due dropCheckInterval later, and a resting agent is never woken
// for it.
type dropCheck struct {
	d      *dispatcher
	subs   *subscriptions
	ticker *time.Ticker
	// due is ticker.C while a check is due, nil (never ready) otherwise: a
	// channel timer nobody waits on is not run
	due  <-chan time.Time
	last map[*nats.Subscription]int
}

func newDropCheck(d *dispatcher, subs *subscriptions) *dropCheck {
	return &dropCheck{d: d, subs: subs, ticker: time.NewTicker(dropCheckInterval), last: map[*nats.Subscription]int{}}
}

// took is called as each message is taken off msgs.
func (c *dropCheck) took(msgs chan *nats.Msg) {
	if c.due == nil && len(msgs) >= cap(msgs)-1 {
		c.ticker.Reset(dropCheckInterval)
		c.due = c.ticker.C
	}
}

func (c *dropCheck) count() {
	c.d.countDropped(c.subs, c.last)
	c.due = nil
}

func (c *dropCheck) stop() { c.ticker.Stop() }

// countDropped adds the messages NATS dropped on each subscription since
// the last call (last holds the previous counts) to the stats and metrics,
// and logs each subject that lost some.
func (d *dispatcher) countDropped(subs *subscriptions, last map[*nats.Subscription]int) {
	current := subs.list()
	for _, s := range current {
		n, err := s.Dropped()
		if err != nil || n <= last[s] {
			continue
		}
		d.stats.dropped.Add(int64(n - last[s]))
		d.metrics.dropped(n - last[s])
		d.log.Error("NATS dropped messages for this agent (slow consumer): their requesters get no reply", "subject", s.Subject, "dropped", n-last[s])
		last[s] = n
	}
	for s := range last {
		if !slices.Contains(current, s) {
			delete(last, s)
		}
	}
}

// handle hands m to admission, or to discovery.
func (d *dispatcher) handle(m *nats.Msg) {
	if isDiscovery(m) {
		d.discovery(m)
		return
	}
	d.request(m)
}
