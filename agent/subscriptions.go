package agent

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/protocol"
)

// subscriptions are the agent's request and discovery subscriptions, all
// feeding one channel. They follow the agent's subject facts: sync
// subscribes to the subjects the facts now give and unsubscribes from the
// ones they no longer do.
type subscriptions struct {
	nc   *nats.Conn
	msgs chan *nats.Msg
	// guards subs
	mu   sync.Mutex
	subs map[string]*nats.Subscription
}

func newSubscriptions(nc *nats.Conn, msgs chan *nats.Msg) *subscriptions {
	return &subscriptions{nc: nc, msgs: msgs, subs: map[string]*nats.Subscription{}}
}

// sync makes the subscriptions those of subjects and reports which were
// added and removed. On an error the subscriptions made so far stay.
func (s *subscriptions) sync(subjects []string) (added, removed []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for subject, sub := range s.subs {
		if slices.Contains(subjects, subject) {
			continue
		}
		// Unsubscribe, not drain: the message NATS already handed over
		// stays in the channel and is answered.
		if err := sub.Unsubscribe(); err != nil {
			return added, removed, fmt.Errorf("unsubscribe %s: %w", subject, err)
		}
		delete(s.subs, subject)
		removed = append(removed, subject)
	}
	for _, subject := range subjects {
		if _, ok := s.subs[subject]; ok {
			continue
		}
		sub, err := s.nc.ChanSubscribe(subject, s.msgs)
		if err != nil {
			return added, removed, fmt.Errorf("subscribe %s: %w", subject, err)
		}
		s.subs[subject] = sub
		added = append(added, subject)
	}
	slices.Sort(removed)
	return added, removed, nil
}

// list returns the current subscriptions.
func (s *subscriptions) list() []*nats.Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*nats.Subscription, 0, len(s.subs))
	for _, sub := range s.subs {
		out = append(out, sub)
	}
	return out
}

// isDiscovery reports whether a message came on a discovery subject.
func isDiscovery(m *nats.Msg) bool {
	return m.Sub != nil && strings.HasPrefix(m.Sub.Subject, protocol.DiscoverySubjectPrefix+".")
}
