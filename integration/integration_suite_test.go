package integration_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/gossrun"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources/engine"
)

func TestIntegration(t *testing.T) {
	RegisterFailHandler(Fail)
	// These suites wait for agents, brokers and processes; on a loaded
	// machine (CI on 2 cores under -race) that can take longer than
	// Gomega's default 1 s. Eventually still returns at the first success.
	SetDefaultEventuallyTimeout(10 * time.Second)
	RunSpecs(t, "Integration Suite")
}

var orchBin string

var _ = SynchronizedBeforeSuite(func() []byte {
	p, err := gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-orch")
	Expect(err).ToNot(HaveOccurred())
	// ccm-orch broker runs the ccm-broker beside it, as installed.
	out, err := exec.Command("go", "build", "-o", filepath.Join(filepath.Dir(p), "ccm-broker"), "github.com/ccm-fleet/ccm/cmd/ccm-broker").CombinedOutput()
	Expect(err).ToNot(HaveOccurred(), string(out))
	return []byte(p)
}, func(p []byte) { orchBin = string(p) })

var _ = SynchronizedAfterSuite(func() {}, func() { gexec.CleanupBuildArtifacts() })

// fleet is a broker (or a cluster) with simulated agents.
type fleet struct {
	// broker is the fleet's broker; nil when it runs on servers given
	// in fleetOptions.
	broker *broker.Broker
	// url is where ccm-orch and test clients connect.
	url    string
	count  int
	prefix string
	facts  map[string]any
	vary   []agent.Vary
	// stateDir holds each agent's state directory, <stateDir>/<identity>.
	stateDir string
	// stopAgents stops the agents (once; the spec's cleanup does too).
	stopAgents func()
}

// fleetOptions change how startFleetWith starts a fleet.
type fleetOptions struct {
	// history creates the history stream and the node registry before
	// the agents start.
	history bool
	// config is the agents' base configuration; its StateDir is set to a
	// temporary directory.
	config agent.Config
	// servers, when set, are the servers of a cluster to run on instead of
	// a broker of its own: agent i connects to them starting with server
	// i mod len(servers), and ccm-orch and test clients to the first.
	servers []string
}

func startFleet(count int, prefix string, base map[string]any, vary ...string) *fleet {
	return startFleetWith(fleetOptions{}, count, prefix, base, vary...)
}

func startFleetWith(o fleetOptions, count int, prefix string, base map[string]any, vary ...string) *fleet {
	f := &fleet{count: count, prefix: prefix, facts: base, stateDir: GinkgoT().TempDir()}
	servers := o.servers
	if len(servers) == 0 {
		f.broker = brokertest.Start(GinkgoT())
		servers = []string{f.broker.ClientURL()}
	}
	f.url = servers[0]
	for _, v := range vary {
		vv, err := agent.ParseVary(v)
		Expect(err).ToNot(HaveOccurred())
		f.vary = append(f.vary, vv)
	}
	if o.history {
		provisionHistory(f.url, len(servers))
	}
	// serversOf lists the servers for a simulated identity, its own first.
	serversOf := func(name string) string {
		i := 0
		if _, n, ok := strings.Cut(name, prefix+"-"); ok {
			i, _ = strconv.Atoi(n)
		}
		k := i % len(servers)
		return strings.Join(append(slices.Clone(servers[k:]), servers[:k]...), ",")
	}
	reg, err := providers.Builtin(providers.Options{})
	Expect(err).ToNot(HaveOccurred())
	cfg := o.config
	cfg.StateDir = f.stateDir
	if cfg.Policy == "" {
		cfg.Insecure = true
	}
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sim := agent.Simulation{
		Count: count, Prefix: prefix, Facts: base, Vary: f.vary, Engine: engine.New(reg, engine.WithHealthRunner(providers.HealthRunner(runner.Exec{})), engine.WithScopedGoss(gossrun.New())), Config: cfg,
		Connect: func(ctx context.Context, name string) (*nats.Conn, error) {
			return nats.Connect(serversOf(name), nats.Name(name), nats.DontRandomize(),
				nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
		},
		Ready: func() { close(ready) },
	}
	go func() { done <- sim.Run(ctx) }()
	var once sync.Once
	f.stopAgents = func() {
		once.Do(func() {
			cancel()
			Eventually(done).WithTimeout(60 * time.Second).Should(Receive(BeNil()))
		})
	}
	DeferCleanup(f.stopAgents)
	Eventually(ready).WithTimeout(60 * time.Second).Should(BeClosed())
	if o.history {
		// Discovery reads the registry: every agent's entry must be there
		// before a spec counts on finding it (on a loaded machine the
		// last puts can land after the agents are ready).
		Expect(fleettest.WaitRegistered(f.url, f.identitiesOf())).To(Succeed())
	}
	return f
}

// provisionHistory creates the history stream and the node registry with
// replicas on the server at url.
func provisionHistory(url string, replicas int) {
	nc, err := nats.Connect(url)
	Expect(err).ToNot(HaveOccurred())
	defer nc.Close()
	js, err := jetstream.New(nc)
	Expect(err).ToNot(HaveOccurred())
	Eventually(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{Replicas: replicas}); err != nil {
			return err
		}
		_, err := jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{Replicas: replicas})
		return err
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
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
	s := f.start(args...)
	Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit())
	return s.ExitCode(), string(s.Out.Contents()), string(s.Err.Contents())
}

// start starts ccm-orch against the fleet's broker and returns at once.
func (f *fleet) start(args ...string) *gexec.Session {
	cmd := exec.Command(orchBin, args...)
	cmd.Env = append(cmd.Environ(), "CCM_SERVER="+f.url)
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(func() { s.Kill().Wait(10 * time.Second) }) // a failed spec leaves no ccm-orch behind
	return s
}

// orchJSON runs ccm-orch with --json and decodes the result document.
func (f *fleet) orchJSON(args ...string) (int, map[string]any) {
	code, out, errOut := f.orch(append(args, "--json")...)
	var doc map[string]any
	Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), "stdout %q stderr %q", out, errOut)
	return code, doc
}
