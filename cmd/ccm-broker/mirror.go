package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// A site's assignment bucket mirrors the hub's. nats-server sets a mirror up
// again on its own backoff when its source goes away, and a site broker
// killed mid-run and started again was seen (integration, a hub of 3) with
// its mirror idle for minutes while the hub answered, so that the site's
// agents never got an assignment stored since. The mirror holds only the
// hub's copy, so the site broker sets a mirror that stays stalled while the
// hub answers up again from scratch: it deletes the stream and creates it
// anew, and it copies the hub's bucket again, revisions included.
type mirrorWatch struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	hub string // the hub's JetStream domain
	cfg jsstore.AssignmentsConfig
	log func(text, msg string, args ...any)

	// stalled counts the checks in a row that found the mirror stalled
	// while the hub answered; reset is when it was last set up again
	stalled int
	reset   time.Time
}

// assignmentStream is the stream of the assignment bucket.
const assignmentStream = "KV_" + protocol.AssignmentsBucket

// watchMirror runs a mirrorWatch on site broker b until ctx ends.
func (a *app) watchMirror(ctx context.Context, b *broker.Broker, cfg jsstore.AssignmentsConfig) {
	nc, js, ok := a.inProcessJS(b, "cannot watch the assignment mirror")
	if !ok {
		return
	}
	defer nc.Close()
	w := &mirrorWatch{nc: nc, js: js, hub: cfg.Hub, cfg: cfg,
		log: func(text, msg string, args ...any) { a.announce(a.Stderr, text, msg, args...) }}
	t := time.NewTicker(sourcingCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check(ctx)
		}
	}
}

// check looks at the mirror and sets it up again when it has stalled for
// stalledChecksBeforeStepDown checks while the hub answers.
func (w *mirrorWatch) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, sourcingRequestTimeout)
	defer cancel()
	s, err := w.js.Stream(cctx, assignmentStream)
	if err != nil {
		return
	}
	m := s.CachedInfo().Mirror
	if m == nil || (m.Active >= 0 && m.Active < sourceStalledAfter) {
		w.stalled = 0
		return
	}
	if time.Since(w.reset) < stepDownAgainAfter || !w.hubAnswers(ctx) {
		w.stalled = 0
		return
	}
	w.stalled++
	if w.stalled < stalledChecksBeforeStepDown {
		return
	}
	w.stalled = 0
	w.reset = time.Now()
	if err := w.setUpAgain(ctx); err != nil {
		w.log(fmt.Sprintf("the mirror of the hub's assignments stalled while the hub answers; setting it up again failed: %v", err),
			"assignment mirror stalled, set up failed", "hub", w.hub, "error", err)
		return
	}
	w.log(fmt.Sprintf("the mirror of the hub's assignments stalled while the hub answers (domain %s): set up again, copying the hub's bucket anew", w.hub),
		"assignment mirror stalled, set up again", "hub", w.hub)
}

// hubAnswers reports whether the hub's JetStream answers for its bucket.
func (w *mirrorWatch) hubAnswers(ctx context.Context) bool {
	js, err := jetstream.NewWithDomain(w.nc, w.hub)
	if err != nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, sourcingRequestTimeout)
	defer cancel()
	_, err = js.Stream(pctx, assignmentStream)
	return err == nil
}

// setUpAgain deletes the mirror and creates it again.
func (w *mirrorWatch) setUpAgain(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, provisionTimeout)
	defer cancel()
	if err := w.js.DeleteStream(rctx, assignmentStream); err != nil {
		return err
	}
	_, err := jsstore.EnsureAssignments(rctx, w.js, w.cfg)
	return err
}

// inProcessJS connects to b in process for a watch of the broker's own;
// false (the problem logged with msg) when it cannot.
func (a *app) inProcessJS(b *broker.Broker, msg string) (*nats.Conn, jetstream.JetStream, bool) {
	nc, err := b.InProcessConn()
	if err != nil {
		a.Logger().Error(msg, "error", err)
		return nil, nil, false
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		a.Logger().Error(msg, "error", err)
		return nil, nil, false
	}
	return nc, js, true
}
