package agent

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/protocol"
)

// followMaxWait bounds the wait between two lookups of an assignment store
// that does not exist or could not be looked up, and wakeSplay how long
// after a change was seen on its subjects an agent may wait before looking
// it up.
const (
	followMaxWait = 5 * time.Minute
	wakeSplay     = 5 * time.Second
)

// storeWake listens for a change republished by the assignment store while
// the agent waits for the store to exist. A nil storeWake only sleeps.
type storeWake struct {
	sub  *nats.Subscription
	seen chan struct{}
}

// newStoreWake subscribes to the store's change subjects; when it cannot,
// the agent only waits (nil, logged).
func newStoreWake(nc *nats.Conn, log *slog.Logger) *storeWake {
	w := &storeWake{seen: make(chan struct{}, 1)}
	sub, err := nc.Subscribe(protocol.AssignmentChangeSubjects, func(*nats.Msg) {
		select {
		case w.seen <- struct{}{}:
		default:
		}
	})
	if err != nil {
		log.Warn("cannot listen for the assignment store's first change; looking it up on a timer only", "error", err)
		return nil
	}
	w.sub = sub
	return w
}

// sleep waits d, or until a change is seen and then a random part of
// splay; false when ctx ended first.
func (w *storeWake) sleep(ctx context.Context, d, splay time.Duration) bool {
	var seen chan struct{}
	if w != nil {
		seen = w.seen
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-seen:
	}
	t.Reset(rand.N(splay + 1))
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// stop ends the subscription.
func (w *storeWake) stop() {
	if w != nil {
		_ = w.sub.Unsubscribe()
	}
}
