package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
)

// Timeouts of the bench's own waits (never part of a measurement).
const (
	stopTimeout = 2 * time.Minute
	settlePoll  = 2 * time.Millisecond
)

// deadlines are the bench's own waits for a fleet of one size: far above
// what a round takes, so a slow round is measured, not cut short. Above
// deadlineFleet agents they grow in proportion: 20,000 agents took 30 s a
// noop round and 4 minutes to start on this 2-core machine, so 50,000
// need about two and a half times the waits.
type deadlines struct {
	// reply is the reply and discovery deadline of a timed run
	reply time.Duration
	// setup is the reply deadline of the setup rounds: the first change
	// on 20,000 simulated agents sharing 2 cores saw 14,904 replies
	// within a minute
	setup time.Duration
	// round bounds one timed round; settle, the wait for its history
	// records; start, the wait for processes and the registry
	round, settle, start time.Duration
	// registryTTL is how long the fleet's registry keeps an entry after
	// its agent's last heartbeat: at 50,000 agents on 2 cores a change
	// round kept JetStream too busy for a minute, some agents' heartbeats
	// failed for over the default 90 s, and registry discovery missed
	// their hosts (65 in one round), so it grows like the waits
	registryTTL time.Duration
}

// deadlineFleet is the largest fleet the base deadlines are for.
const deadlineFleet = 20000

func deadlinesFor(n int) deadlines {
	scale := func(d time.Duration) time.Duration {
		if n <= deadlineFleet {
			return d
		}
		return d * time.Duration(n) / deadlineFleet
	}
	return deadlines{
		reply: scale(time.Minute), setup: scale(5 * time.Minute),
		round: scale(2 * time.Minute), settle: scale(2 * time.Minute), start: scale(10 * time.Minute),
		registryTTL: scale(jsstore.DefaultRegistryTTL),
	}
}

// site is an embedded broker with the history stream and the node
// registry, and the bench's connection to it.
type site struct {
	b   *broker.Broker
	url string
	// urls are every broker's client URL, this process's first; peers
	// are the other brokers of a cluster
	urls  []string
	peers procs
	nc    *nats.Conn
	js    jetstream.JetStream
	// history counts the records the stream should hold once every
	// reply of the runs so far was written.
	history uint64
	// dir, when set, is removed by stop
	dir string
	// sources, at a hub, are the sites its history and registry are
	// sourced from (for error messages)
	sources []string
	// dl are the waits for the fleet this site serves
	dl deadlines
}

// openSite makes a fresh directory called name below the work directory
// and starts a broker with its store there; stop removes both.
// With brokers above 1 the site is a cluster of that many servers.
func (b *bencher) openSite(ctx context.Context, name string, registryTTL time.Duration, brokers int) (*site, string, error) {
	dir, err := b.dir(name)
	if err != nil {
		return nil, "", err
	}
	s, err := b.startSite(ctx, dir, registryTTL, brokers)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	s.dir = dir
	return s, dir, nil
}

// startSite starts a broker with its store below dir, and brokers-1 peers
// forming a cluster with it.
func (b *bencher) startSite(ctx context.Context, dir string, registryTTL time.Duration, brokers int) (*site, error) {
	cfg := broker.Config{Listen: "127.0.0.1:-1", StoreDir: filepath.Join(dir, "store")}
	var plan *cluster
	if brokers > 1 {
		var err error
		if plan, err = planCluster(brokers); err != nil {
			return nil, err
		}
		cfg.Listen = fmt.Sprintf("127.0.0.1:%d", plan.clientPorts[0])
		cfg.ServerName = "bench-1"
		cfg.Cluster = broker.ClusterConfig{Name: "bench", Listen: fmt.Sprintf("127.0.0.1:%d", plan.routePorts[0]), Routes: plan.routes()}
	}
	br, err := broker.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("bench broker: %w", err)
	}
	s := &site{b: br, dl: deadlinesFor(0)}
	if plan != nil {
		// The peers first: a clustered server's JetStream waits for them.
		if s.peers, err = b.startPeers(ctx, plan, dir); err != nil {
			return nil, err
		}
	}
	if err := br.Start(ctx); err != nil {
		s.peers.stop(stopTimeout)
		return nil, fmt.Errorf("bench broker: %w", err)
	}
	s.url = br.ClientURL()
	s.urls = []string{s.url}
	for i := 1; i < brokers; i++ {
		s.urls = append(s.urls, plan.url(i))
	}
	if err := s.provision(ctx, jsstore.HistoryConfig{}, jsstore.RegistryConfig{TTL: registryTTL}); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// provision connects the bench to the site's broker and creates the
// history stream and the node registry (with their sources, at a hub) and
// the assignment store (which the sites' stores mirror, at a hub).
func (s *site) provision(ctx context.Context, hc jsstore.HistoryConfig, rc jsstore.RegistryConfig) error {
	var err error
	s.nc, err = nats.Connect(s.url, nats.Name("ccm-bench"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	s.js, err = jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := retryUntil(pctx, func(ctx context.Context) error {
		_, err := jsstore.EnsureHistory(ctx, s.js, hc)
		return err
	}); err != nil {
		return fmt.Errorf("bench: history stream: %w", err)
	}
	if _, err := jsstore.EnsureRegistry(pctx, s.js, rc); err != nil {
		return fmt.Errorf("bench: node registry: %w", err)
	}
	// As ccm-orch history init does: agents that find no assignment store
	// look for it now and then (see docs/assignments.md), which a
	// provisioned fleet does not pay.
	if _, err := jsstore.EnsureAssignments(pctx, s.js, jsstore.AssignmentsConfig{}); err != nil {
		return fmt.Errorf("bench: assignments: %w", err)
	}
	return nil
}

// stop closes the connection and shuts the broker down.
func (s *site) stop() {
	if s.nc != nil {
		s.nc.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	_ = s.b.Shutdown(ctx)
	s.peers.stop(stopTimeout)
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// retryUntil calls f, each time with a few seconds, until it succeeds or
// ctx ends (a new cluster's JetStream answers only once its servers have
// elected a leader, and a request sent before may never be answered); the
// last error then.
func retryUntil(ctx context.Context, f func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// centralCPU is the CPU the center used so far: this process (broker,
// and the orchestrator of library rows) and the broker's peers.
func (s *site) centralCPU() time.Duration { return selfCPU() + s.peers.cpu() }

// waitRegistered waits until the node registry holds n entries.
func (s *site) waitRegistered(ctx context.Context, n int) error {
	deadline := time.Now().Add(s.dl.start)
	for {
		kv, err := jsstore.LookupRegistry(ctx, s.js)
		got := 0
		if err == nil {
			var nodes []*protocol.NodeRecord
			nodes, _, err = jsstore.ListNodes(ctx, s.js, kv)
			got = len(nodes)
		}
		if err == nil && got >= n {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("bench: %d of %d agents in the node registry%s after %s (%v)", got, n, s.sourcedFrom(), s.dl.start, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sourcedFrom names the sites a hub's history and registry are sourced
// from, with how each source fares, for error messages; empty for any
// other site.
func (s *site) sourcedFrom() string {
	if len(s.sources) == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var state []string
	for _, name := range []string{protocol.HistoryStream, "KV_" + protocol.NodesBucket} {
		st, err := s.js.Stream(ctx, name)
		if err != nil {
			state = append(state, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, src := range st.CachedInfo().Sources {
			state = append(state, sourceState(name, src))
		}
	}
	return fmt.Sprintf(" (the hub's, sourced from sites %s: %s)", strings.Join(s.sources, ","), strings.Join(state, "; "))
}

// sourceState says how one source of a hub's stream fares: its site, lag
// and last activity.
func sourceState(stream string, src *jetstream.StreamSourceInfo) string {
	site := "?"
	if src.External != nil {
		site = strings.TrimSuffix(strings.TrimPrefix(src.External.APIPrefix, "$JS."), ".API")
	}
	active := "never active"
	if src.Active >= 0 {
		active = fmt.Sprintf("active %s ago", src.Active.Round(time.Millisecond))
	}
	text := fmt.Sprintf("%s from %s: lag %d, %s", stream, site, src.Lag, active)
	if src.Error != nil {
		text += fmt.Sprintf(", error %s", src.Error.Description)
	}
	return text
}

// historyMsgs is how many records the history stream holds.
func (s *site) historyMsgs(ctx context.Context) (uint64, error) {
	st, err := s.js.Stream(ctx, protocol.HistoryStream)
	if err != nil {
		return 0, err
	}
	return st.CachedInfo().State.Msgs, nil
}

// settle waits until the history stream holds s.history records (every
// reply so far recorded) and returns when that was, so runs do not
// overlap with the previous run's history writes. When they never all
// arrive it adopts the stream's count and reports an error.
func (s *site) settle(ctx context.Context) (time.Time, error) {
	deadline := time.Now().Add(s.dl.settle)
	for {
		n, err := s.historyMsgs(ctx)
		if err == nil && n >= s.history {
			return time.Now(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			err = fmt.Errorf("history%s holds %d records, %d expected: %v", s.sourcedFrom(), n, s.history, err)
			s.history = n
			return time.Now(), err
		}
		// Poll fast at first, when the records are about to land, then
		// gently, so a wait that drags on does not load the broker.
		if time.Until(deadline) > s.dl.settle-time.Second {
			time.Sleep(settlePoll)
		} else {
			time.Sleep(50 * settlePoll)
		}
	}
}

// floorSubject is what the floor's responders listen on.
const floorSubject = "bench.floor"

// floorRound publishes one request-sized message and waits for n replies,
// returning the time from the publish to the n-th reply.
func (s *site) floorRound(ctx context.Context, request []byte, n int) (time.Duration, error) {
	inbox := s.nc.NewInbox()
	var got atomic.Int64
	done := make(chan struct{})
	sub, err := s.nc.Subscribe(inbox, func(*nats.Msg) {
		if got.Add(1) == int64(n) {
			close(done)
		}
	})
	if err != nil {
		return 0, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return 0, err
	}
	if err := s.nc.Flush(); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := s.nc.PublishMsg(natsconn.NewMsg(floorSubject, inbox, nil, request)); err != nil {
		return 0, err
	}
	t := time.NewTimer(s.dl.round)
	defer t.Stop()
	select {
	case <-done:
		return time.Since(start), nil
	case <-t.C:
		return 0, fmt.Errorf("floor: %d of %d replies after %s", got.Load(), n, s.dl.round)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// startResponders starts the floor's n responders, in as many child
// processes as their connections need, spread over the site's brokers.
func (b *bencher) startResponders(ctx context.Context, s *site, n int) (procs, error) {
	var names []string
	var args [][]string
	for i, count := range parts(n, layoutFor(n, b.fdLimit).responderProcs) {
		names = append(names, fmt.Sprintf("%d floor responders", count))
		args = append(args, []string{RespondersCommand, "--server", s.urls[i%len(s.urls)], "--count", strconv.Itoa(count),
			"--subject", floorSubject, "--reply-bytes", strconv.Itoa(b.replyBytes)})
	}
	bin, args := niced(b.cfg.Nice, b.cfg.BenchBin, args)
	return startAll(ctx, deadlinesFor(n).start, bin, respondersReady, names, args)
}

// agentsReady is what ccm-agent simulate prints once every agent serves.
const agentsReady = "simulated agents serving"

// agentGroup is one ccm-agent simulate process: how many agents, the
// broker they connect to and, in a sites topology, their site.
type agentGroup struct {
	url, site string
	count     int
}

// startAgents starts n simulated agents (ccm-agent simulate) with their
// state below dir, in as many child processes as their open files need,
// spread over the site's brokers, and returns once every one serves.
func (b *bencher) startAgents(ctx context.Context, s *site, dir string, n int) (procs, error) {
	var groups []agentGroup
	for i, count := range parts(n, layoutFor(n, b.fdLimit).agentProcs) {
		groups = append(groups, agentGroup{url: s.urls[i%len(s.urls)], count: count})
	}
	return b.startAgentGroups(ctx, dir, fmt.Sprintf("agents-%d", n), groups)
}

// startAgentGroups starts one ccm-agent simulate process per group, their
// identities numbered on from one group to the next, with their state
// below dir; profile names their CPU profiles. It returns once every
// agent serves.
func (b *bencher) startAgentGroups(ctx context.Context, dir, profile string, groups []agentGroup) (procs, error) {
	var names []string
	var args [][]string
	total := 0
	for _, g := range groups {
		total += g.count
	}
	first := 1
	for i, g := range groups {
		a := []string{"simulate", "--server", g.url, "--count", strconv.Itoa(g.count), "--first", strconv.Itoa(first),
			"--state-dir", filepath.Join(dir, "state"), "--vary", "os=debian,rhel", "--vary", "role=web,db,cache", "--policy", b.sign.policyFile}
		name := fmt.Sprintf("%d simulated agents from %d", g.count, first)
		if g.site != "" {
			a = append(a, "--site", g.site)
			name += " at site " + g.site
		}
		if b.cfg.ProfileDir != "" {
			file := profile + ".pprof"
			if len(groups) > 1 {
				file = fmt.Sprintf("%s-%d.pprof", profile, i+1)
			}
			a = append(a, "--cpuprofile", filepath.Join(b.cfg.ProfileDir, file),
				"--memprofile", filepath.Join(b.cfg.ProfileDir, strings.TrimSuffix(file, ".pprof")+".heap"))
		}
		names = append(names, name)
		args = append(args, a)
		first += g.count
	}
	bin, args := niced(b.cfg.Nice, b.cfg.AgentBin, args)
	return startAll(ctx, deadlinesFor(total).start, bin, agentsReady, names, args)
}
