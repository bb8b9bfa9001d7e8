package agent_test

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/micro"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("The agent as a NATS micro service", func() {
	It("answers micro ping, info and stats, and its stats endpoint, with its identity, version and counters", func() {
		f := startAgent(agent.Config{Identity: "svc-1"}, map[string]any{"os": "debian"}, agent.WithService(), agent.WithVersion("v1.4.0"))
		f.send(protocol.RequestNodeSubject("svc-1"), ensureRequest("svc-req", time.Minute, "exec", map[string]any{"name": "/bin/true"}))

		m, err := f.nc.Request("$SRV.PING."+protocol.AgentServiceName, nil, 5*time.Second)
		Expect(err).ToNot(HaveOccurred())
		var ping micro.Ping
		Expect(json.Unmarshal(m.Data, &ping)).To(Succeed())
		Expect(ping.Name).To(Equal("ccm-agent"))
		Expect(ping.Version).To(Equal("1.4.0"))

		m, err = f.nc.Request("$SRV.INFO."+protocol.AgentServiceName, nil, 5*time.Second)
		Expect(err).ToNot(HaveOccurred())
		var info micro.Info
		Expect(json.Unmarshal(m.Data, &info)).To(Succeed())
		Expect(info.Metadata).To(HaveKeyWithValue("identity", "svc-1"))
		Expect(info.Metadata).To(HaveKeyWithValue("version", "v1.4.0"))
		Expect(info.Endpoints).To(HaveLen(1))
		Expect(info.Endpoints[0].Subject).To(Equal(protocol.AgentStatsSubject("svc-1")))

		m, err = f.nc.Request("$SRV.STATS."+protocol.AgentServiceName, nil, 5*time.Second)
		Expect(err).ToNot(HaveOccurred())
		var stats micro.Stats
		Expect(json.Unmarshal(m.Data, &stats)).To(Succeed())
		Expect(stats.Endpoints).To(HaveLen(1))
		var counters agent.StatsSnapshot
		Expect(json.Unmarshal(stats.Endpoints[0].Data, &counters)).To(Succeed())
		Expect(counters.Received).To(BeNumerically(">=", 1))
		Expect(counters.Executed).To(BeNumerically(">=", 1))

		m, err = f.nc.Request(protocol.AgentStatsSubject("svc-1"), nil, 5*time.Second)
		Expect(err).ToNot(HaveOccurred())
		Expect(json.Unmarshal(m.Data, &counters)).To(Succeed())
		Expect(counters.Received).To(BeNumerically(">=", 1))
	})

	It("is not a micro service unless asked (simulated fleets)", func() {
		f := startAgent(agent.Config{Identity: "svc-2"}, map[string]any{"os": "debian"})
		_, err := f.nc.Request("$SRV.PING."+protocol.AgentServiceName, nil, 300*time.Millisecond)
		Expect(err).To(HaveOccurred())
	})
})
