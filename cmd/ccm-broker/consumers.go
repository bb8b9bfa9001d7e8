package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/broker"
)

// A site's mirror of the hub's assignments needs its leaf user to create
// consumers of the hub's bucket ($JS.<hub>.API.CONSUMER.CREATE.
// KV_CCM_ASSIGNMENTS, broker.LeafPermissions), and nats-server cannot tell
// the mirror's request from one that a client of a site broker sends
// across the same link. Such a consumer reads only what the sites mirror
// anyway, but its deliver subject is the creator's choice: the bucket's
// values and the consumer's idle heartbeats could be delivered to
// ccm.v1.req.all at the hub, and from there to every agent of every site.
// A hub broker therefore deletes every push consumer of the bucket that
// delivers elsewhere than a mirror's subject ($JS.M.) or an inbox
// (_INBOX.), as soon as nats-server announces it and in a sweep every
// consumerSweepInterval.
const (
	// consumerSweepInterval is how often the guard looks at every
	// consumer of the bucket (the advisories it follows are not kept, so
	// one published while it was not listening would be missed).
	consumerSweepInterval = time.Minute
	// consumerSweepTimeout bounds one sweep (a bucket made by an earlier
	// release has a consumer per agent).
	consumerSweepTimeout = 30 * time.Second
	// consumerAdvisories announces each consumer created on the bucket.
	consumerAdvisories = "$JS.EVENT.ADVISORY.CONSUMER.CREATED." + assignmentStream + ".*"
)

// allowedDeliverSubject reports whether a consumer of the hub's assignment
// bucket may deliver to subject: a pull consumer (none), a mirror's or an
// inbox (ccm-orch's and the dashboard's watchers, nats.go's ordered
// consumers).
func allowedDeliverSubject(subject string) bool {
	return subject == "" || strings.HasPrefix(subject, "$JS.M.") || strings.HasPrefix(subject, "_INBOX.")
}

// consumerGuard deletes the hub's assignment consumers that deliver
// elsewhere; see above.
type consumerGuard struct {
	js  jetstream.JetStream
	log func(text, msg string, args ...any)
}

// guardConsumers runs a consumerGuard on hub b until ctx ends.
func (a *app) guardConsumers(ctx context.Context, b *broker.Broker) {
	nc, js, ok := a.inProcessJS(b, "cannot guard the consumers of the assignment bucket")
	if !ok {
		return
	}
	defer nc.Close()
	created := make(chan string, 256)
	sub, err := nc.Subscribe(consumerAdvisories, func(m *nats.Msg) {
		name := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
		select {
		case created <- name:
		default: // the sweep finds it
		}
	})
	if err != nil {
		a.announce(a.Stderr, fmt.Sprintf("cannot guard the consumers of the assignment bucket: %v", err), "consumer guard failed", "error", err)
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	g := &consumerGuard{js: js, log: func(text, msg string, args ...any) { a.announce(a.Stderr, text, msg, args...) }}
	g.sweep(ctx)
	t := time.NewTicker(consumerSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-created:
			g.check(ctx, name)
		case <-t.C:
			g.sweep(ctx)
		}
	}
}

// sweep checks every consumer of the bucket.
func (g *consumerGuard) sweep(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, consumerSweepTimeout)
	defer cancel()
	s, err := g.js.Stream(cctx, assignmentStream)
	if err != nil {
		return
	}
	var refused []string
	list := s.ListConsumers(cctx)
	for info := range list.Info() {
		if !allowedDeliverSubject(info.Config.DeliverSubject) {
			refused = append(refused, info.Name)
		}
	}
	for _, name := range refused {
		g.check(ctx, name)
	}
}

// check deletes consumer name of the bucket when it delivers elsewhere
// than allowed, and says so.
func (g *consumerGuard) check(ctx context.Context, name string) {
	cctx, cancel := context.WithTimeout(ctx, sourcingRequestTimeout)
	defer cancel()
	// A pull consumer delivers nowhere; nats.go opens a push consumer
	// apart.
	c, err := g.js.PushConsumer(cctx, assignmentStream, name)
	if err != nil {
		return
	}
	deliver := c.CachedInfo().Config.DeliverSubject
	if allowedDeliverSubject(deliver) {
		return
	}
	// Every hub broker hears the advisory: the first one deletes.
	if err := g.js.DeleteConsumer(cctx, assignmentStream, name); err != nil {
		return
	}
	g.log(fmt.Sprintf("deleted consumer %s of the assignment bucket %s: it delivered to %q, neither a mirror's ($JS.M.) nor an inbox (_INBOX.)", name, assignmentStream, deliver),
		"assignment consumer deleted", "consumer", name, "stream", assignmentStream, "deliver_subject", deliver)
}
