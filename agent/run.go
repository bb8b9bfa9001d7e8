package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Run subscribes and serves until ctx is done, then stops taking requests,
// lets accepted ones finish (up to the shutdown timeout, after which they
// are cancelled) and returns. Before it reports ready it puts the agent's
// node registry entry; it refreshes it every heartbeat and deletes it on
// the way out. Replies are recorded in the history stream, or kept in the
// spool until JetStream takes them.
func (a *Agent) Run(ctx context.Context) error {
	a.facts.started = a.now().UTC()
	defer a.setup.close()
	a.setup.warnTrust(a.log)
	jobsCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	a.queue.ctx = jobsCtx
	stopHistory := goHistory(ctx, a.fin.history, a.cfg.ShutdownTimeout, a.log)

	a.setup.metrics.bind(a.setup.version, liveGauges(a.nc, a.fin.history.spool))
	// Requests the previous run stopped on are answered before new ones.
	a.fin.recordInterrupted(a.setup.replay.takeInterrupted())

	reg := &registrar{a: a}
	reg.start(ctx)

	subs, stopDispatch := goDispatch(a.nc, &dispatcher{
		request:   a.onRequest,
		discovery: a.onDiscovery,
		overflow:  a.onOverflow,
		stats:     a.fin.stats, metrics: a.setup.metrics, log: a.log,
	})
	reqSubjects, discSubjects := a.Subjects()
	err := subscribe(a.nc, subs, a.cfg.Identity, append(slices.Clone(reqSubjects), discSubjects...), a.log)
	if err == nil {
		a.log.Info("serving", "requests", reqSubjects)
		if a.setup.service {
			defer startService(a.nc, a.cfg.Identity, a.setup.version, a.Stats, a.log)()
		}
		// The assigner follows the assignment store while the agent
		// serves; it counts as a worker, so the shutdown waits for its
		// run like for a request's.
		a.exec.openJournal(a.cfg.StateDir)
		asg := newAssigner(a)
		a.queue.workers.Add(1)
		go func() {
			defer a.queue.workers.Done()
			asg.run(ctx, jobsCtx)
		}()
		goSources(ctx, a)
		if a.setup.ready != nil {
			a.setup.ready()
		}
		a.serve(ctx, subs, reg)
	} else {
		// Not serving: no heartbeat for a host that serves nothing.
		reg.remove(context.WithoutCancel(ctx))
	}
	drain(subs, a.nc, a.cfg.ShutdownTimeout)
	stopDispatch()
	a.queue.close()
	waitOrCancel(&a.queue.workers, a.cfg.ShutdownTimeout, cancelJobs, a.log)
	// Every reply is handed over: let history write (or spool) them.
	stopHistory()
	return err
}

// goDispatch starts d on one channel that every request and discovery
// subscription feeds, however many subjects the agent listens on (the
// micro service of WithService has its own); stop ends it once it handled
// what it holds.
func goDispatch(nc *nats.Conn, d *dispatcher) (subs *subscriptions, stop func()) {
	msgs := make(chan *nats.Msg, subscriptionBuffer)
	subs = newSubscriptions(nc, msgs)
	stopCh, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		d.run(msgs, subs, stopCh)
	}()
	return subs, func() { close(stopCh); <-done }
}

// subscribe subscribes to subjects and waits for the server to have them:
// up to subscribeFlushes round trips of subscribeFlushTimeout each, as a
// broker busy with a whole fleet starting answers late.
func subscribe(nc *nats.Conn, subs *subscriptions, identity string, subjects []string, log *slog.Logger) error {
	if _, _, err := subs.sync(subjects); err != nil {
		return fmt.Errorf("agent %s: %w", identity, err)
	}
	var err error
	for i := range subscribeFlushes {
		if err = nc.FlushTimeout(subscribeFlushTimeout); err == nil {
			return nil
		}
		if i < subscribeFlushes-1 {
			log.Warn("the broker has not confirmed the subscriptions yet; waiting again", "error", err, "waited", subscribeFlushTimeout*time.Duration(i+1))
		}
	}
	return fmt.Errorf("agent %s: subscribe: the broker did not confirm the subscriptions in %s: %w", identity, subscribeFlushTimeout*subscribeFlushes, err)
}

// subscribeFlushes and subscribeFlushTimeout bound how long subscribe
// waits for the broker.
const subscribeFlushes = 6

var subscribeFlushTimeout = 10 * time.Second

// drain stops taking requests, handing what the subscriptions already
// hold to the dispatcher, for up to timeout.
func drain(subs *subscriptions, nc *nats.Conn, timeout time.Duration) {
	for _, s := range subs.list() {
		_ = s.Drain()
	}
	drainBy := time.Now().Add(timeout)
	for _, s := range subs.list() {
		// Disconnected, a drain cannot finish: nothing more will arrive.
		for s.IsValid() && nc.IsConnected() && time.Now().Before(drainBy) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// waitOrCancel waits for wg, calling cancel when timeout passes first.
func waitOrCancel(wg *sync.WaitGroup, timeout time.Duration, cancel func(), log *slog.Logger) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		log.Warn("shutdown timeout passed, cancelling running requests")
		cancel()
		<-done
	}
}

// goHistory runs h until the returned stop is called: stop closes h's
// records and waits for them to be written (or, past timeout, left for
// the spool).
func goHistory(ctx context.Context, h *history, timeout time.Duration, log *slog.Logger) (stop func()) {
	histCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); h.run(histCtx) }()
	return func() {
		defer cancel()
		h.close()
		select {
		case <-done:
		case <-time.After(timeout):
			log.Warn("shutdown timeout passed, history records left for the spool")
			cancel()
			<-done
		}
	}
}

// warnTrust says out loud when the agent accepts unsigned requests, or
// trusts no one.
func (st *setup) warnTrust(log *slog.Logger) {
	switch {
	case st.insecure:
		log.Warn("INSECURE: this agent accepts unsigned requests from anyone who can publish to its subjects; configure a policy with trusted signers")
	case st.policy == nil || len(st.policy.Signers) == 0:
		log.Warn("no trusted signers: every request will be refused (configure a policy)")
	}
}
