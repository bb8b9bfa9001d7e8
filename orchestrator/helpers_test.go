package orchestrator_test

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

// fleetSize agents with os, role and platform_version varying: os cycles
// debian, rhel; role web, db (every second pair); platform_version 11,
// 12.4, 13 (every fourth).
const fleetSize = 24

var fleetVary = []string{"os=debian,rhel", "role=web,db", "platform_version=11,12.4,13"}

func startFleet() *fleettest.Fleet {
	return fleettest.Start(GinkgoT(), fleetSize, map[string]any{"kernel": "Linux"}, fleetVary...)
}

// identitiesWhere lists the fleet's identities whose facts satisfy pred.
func identitiesWhere(f *fleettest.Fleet, pred func(map[string]any) bool) []string {
	out := []string{}
	for i, facts := range f.Facts {
		if pred(facts) {
			out = append(out, f.Identities[i])
		}
	}
	return out
}

func mustFilter(where []string, hosts []string) *protocol.Filter {
	f, err := protocol.NewFilter(where, hosts)
	Expect(err).NotTo(HaveOccurred())
	return f
}

func ensureRequest(typeName string, props map[string]any) *protocol.EnsureRequest {
	e, err := protocol.NewEnsureRequest(typeName, props)
	Expect(err).NotTo(HaveOccurred())
	return e
}

// sniff subscribes to subject and returns the subscription, to count what
// was sent; call pending after flushing both connections.
func sniff(nc *nats.Conn, subject string) *nats.Subscription {
	sub, err := nc.SubscribeSync(subject)
	Expect(err).NotTo(HaveOccurred())
	Expect(nc.Flush()).To(Succeed())
	DeferCleanup(sub.Unsubscribe)
	return sub
}

// sent returns what sub, a subscription on the sender's own connection,
// received: after a flush, everything the connection published before has
// been delivered back to it.
func sent(nc *nats.Conn, sub *nats.Subscription) []*nats.Msg {
	Expect(nc.Flush()).To(Succeed())
	var out []*nats.Msg
	for {
		n, _, err := sub.Pending()
		Expect(err).NotTo(HaveOccurred())
		if n == 0 {
			return out
		}
		m, err := sub.NextMsg(time.Second)
		Expect(err).NotTo(HaveOccurred())
		out = append(out, m)
	}
}

func fleetReply(requestID, identity string) []byte {
	b, err := json.Marshal(protocol.NewFleetReply(requestID, identity, time.Now()))
	Expect(err).NotTo(HaveOccurred())
	return b
}
