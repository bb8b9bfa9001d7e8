package integration_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

func TestIntegration(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Integration Suite")
}

var orchBin string

var _ = SynchronizedBeforeSuite(func() []byte {
	p, err := gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-orch")
	Expect(err).ToNot(HaveOccurred())
	return []byte(p)
}, func(p []byte) { orchBin = string(p) })

var _ = SynchronizedAfterSuite(func() {}, func() { gexec.CleanupBuildArtifacts() })

// fleet is a broker with simulated agents.
type fleet struct {
	broker *broker.Broker
	count  int
	prefix string
	facts  map[string]any
	vary   []agent.Vary
}

func startFleet(count int, prefix string, base map[string]any, vary ...string) *fleet {
	f := &fleet{broker: brokertest.Start(GinkgoT()), count: count, prefix: prefix, facts: base}
	for _, v := range vary {
		vv, err := agent.ParseVary(v)
		Expect(err).ToNot(HaveOccurred())
		f.vary = append(f.vary, vv)
	}
	reg, err := providers.Builtin(providers.Options{})
	Expect(err).ToNot(HaveOccurred())
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sim := agent.Simulation{
		Count: count, Prefix: prefix, Facts: base, Vary: f.vary, Engine: engine.New(reg),
		Connect: func(ctx context.Context, name string) (*nats.Conn, error) {
			return nats.Connect(f.broker.ClientURL(), nats.Name(name))
		},
		Ready: func() { close(ready) },
	}
	go func() { done <- sim.Run(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
	})
	Eventually(ready).WithTimeout(30 * time.Second).Should(BeClosed())
	return f
}

// factsOf returns every simulated host's facts, by identity.
func (f *fleet) factsOf() map[string]map[string]any {
	out := map[string]map[string]any{}
	for i := range f.count {
		fs := agent.SimulatedFacts(i, f.prefix, f.facts, f.vary)
		out[fs["identity"].(string)] = fs
	}
	return out
}

// orch runs ccm-orch against the fleet's broker and returns its exit code
// and output.
func (f *fleet) orch(args ...string) (int, string, string) {
	cmd := exec.Command(orchBin, args...)
	cmd.Env = append(cmd.Environ(), "CCM_SERVER="+f.broker.ClientURL())
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).ToNot(HaveOccurred())
	Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit())
	return s.ExitCode(), string(s.Out.Contents()), string(s.Err.Contents())
}

// orchJSON runs ccm-orch with --json and decodes the result document.
func (f *fleet) orchJSON(args ...string) (int, map[string]any) {
	code, out, errOut := f.orch(append(args, "--json")...)
	var doc map[string]any
	Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), "stdout %q stderr %q", out, errOut)
	return code, doc
}
