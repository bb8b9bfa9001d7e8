package orchestrator_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

// A host that answers discovery late is what a busy cluster looks like to
// a broadcast round: at 20,000 simulated agents, a broker whose read loops
// stalled for seconds sent its hosts' announcements after the quiet window
// had ended the round, and they replied to the request unasked.
var _ = Describe("a broadcast run's discovery quiet window", func() {
	const (
		lateHost = "late-1"
		// lateBy is when the late host announces itself: well after the
		// quiet window (and its first wait) of a round whose other hosts
		// answered at once, well before the discovery timeout
		lateBy           = 4 * time.Second
		discoveryTimeout = 8 * time.Second
	)
	var (
		fl     *fleettest.Fleet
		nc     *nats.Conn
		client *orchestrator.Client
	)
	BeforeEach(func() {
		fl = startFleet()
		nc = fl.Connect(GinkgoT())
		client = orchestrator.New(nc, orchestrator.WithLogger(slog.New(slog.NewTextHandler(GinkgoWriter, nil))))
		// the late host: announces itself lateBy after a discovery request,
		// and replies to a fleet request at once
		disc, err := nc.Subscribe(protocol.DiscoverySubjectAll, func(m *nats.Msg) {
			req, err := protocol.DecodeDiscoveryRequest(m.Data, protocol.Limits{})
			if err != nil {
				return
			}
			b, err := json.Marshal(protocol.DiscoveryReply{Protocol: protocol.DiscoveryReplyProtocol, RequestID: req.ID, Identity: lateHost, Facts: map[string]any{"os": "debian"}})
			if err != nil {
				return
			}
			time.AfterFunc(lateBy, func() { _ = m.Respond(b) })
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(disc.Unsubscribe)
		req, err := nc.Subscribe(protocol.RequestSubjectAll, func(m *nats.Msg) {
			fr, err := protocol.DecodeFleetRequest(m.Data, protocol.Limits{})
			if err != nil {
				return
			}
			b, err := json.Marshal(protocol.NewFleetReply(fr.ID, lateHost, time.Now()))
			if err != nil {
				return
			}
			_ = m.Respond(b)
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(req.Unsubscribe)
		Expect(nc.Flush()).To(Succeed())
	})

	run := func(quiet time.Duration) *orchestrator.Result {
		res, err := client.Run(context.Background(), orchestrator.Request{
			Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true", "unless": "/bin/true"}), Noop: true,
			Discovery: orchestrator.DiscoveryBroadcast, DiscoveryTimeout: discoveryTimeout, DiscoveryQuiet: quiet,
		})
		Expect(err).NotTo(HaveOccurred())
		return res
	}

	It("misses the late host with the default window: it is not expected, and its reply is not counted", func() {
		res := run(0)
		Expect(res.Discovery).To(Equal(protocol.DiscoveryBroadcast))
		Expect(res.Expected).To(Equal(fl.Identities), "the agents, without the late host")
		Expect(res.Replied).To(Equal(fleetSize))
		Expect(slices.ContainsFunc(res.Hosts, func(h orchestrator.HostResult) bool { return h.Identity == lateHost })).To(BeFalse())
	})

	It("finds it with a window as long as the discovery timeout, which lasts the whole round", func() {
		res := run(discoveryTimeout)
		Expect(res.Expected).To(ContainElement(lateHost))
		Expect(res.Expected).To(HaveLen(fleetSize + 1))
		Expect(res.Replied).To(Equal(fleetSize + 1))
		Expect(res.Unexpected).To(BeEmpty())
		Expect(res.Elapsed).To(BeNumerically(">=", discoveryTimeout), "a quiet window as long as the timeout never ends the round early")
	})

	It("refuses a negative window before sending anything", func() {
		sub := sniff(nc, protocol.DiscoverySubjectPrefix+".>")
		_, err := client.Run(context.Background(), orchestrator.Request{
			Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}), Noop: true,
			Discovery: orchestrator.DiscoveryBroadcast, DiscoveryQuiet: -time.Second,
		})
		Expect(err).To(MatchError(orchestrator.ErrInvalid))
		Expect(err).To(MatchError(ContainSubstring("discovery quiet window -1s is negative")))
		Expect(sent(nc, sub)).To(BeEmpty())
	})
})
