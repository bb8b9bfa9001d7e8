package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A process may hold only so many open files (RLIMIT_NOFILE; on this
// project's build machine the hard limit is 20,000 and cannot be raised),
// and every agent costs one on each side of its connection. A fleet too
// large for one process is spread over several: simulated agents and
// responders over several child processes, and the broker over a cluster
// of several servers (this process's and ccm-broker children),
// which is how a real deployment outgrows one server too.
const (
	// fdReserve is what a process keeps for everything but connections.
	fdReserve = 256
	// agentFDs is what one simulated agent may hold open: its connection,
	// its replay cache and its audit log, and while it applies a file
	// resource the directories of the path walk and the file itself (with
	// 3, thousands of agents applying at once ran out: "too many open
	// files" in the 20,000-agent setup round).
	agentFDs = 6
)

// layout is how a fleet of a size is spread over processes.
type layout struct {
	brokers, agentProcs, responderProcs int
}

// layoutFor spreads n agents so that no process needs more than limit
// open files.
func layoutFor(n int, limit uint64) layout {
	room := max(int(min(limit, 1<<30))-fdReserve, 64)
	brokers := ceilDiv(n+64, room) // the bench's and ccm-orch's own connections
	if brokers > 1 {
		// JetStream's leaders need a majority: with 2 servers a busy one
		// missing a heartbeat leaves the cluster without a leader (the
		// 20,000-agent run saw "no responders" from JetStream); with 3,
		// one can lag.
		brokers = max(brokers, 3)
	}
	return layout{
		brokers:        brokers,
		agentProcs:     ceilDiv(n*agentFDs, room),
		responderProcs: ceilDiv(n, room),
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// parts splits n into k counts that differ by at most one.
func parts(n, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = n / k
		if i < n%k {
			out[i]++
		}
	}
	return out
}

// procs are child processes that together play one part (the agents, the
// responders, the broker's peers).
type procs []*child

// cpu is their user+system CPU so far.
func (p procs) cpu() time.Duration {
	var sum time.Duration
	for _, c := range p {
		if d, err := procCPU(c.pid()); err == nil {
			sum += d
		}
	}
	return sum
}

// rss is their resident set sizes and peaks, added up.
func (p procs) rss() (rss, peak int64, err error) {
	for _, c := range p {
		r, pk, perr := procRSS(c.pid())
		if perr != nil {
			return 0, 0, fmt.Errorf("%s: %w", c.name, perr)
		}
		rss, peak = rss+r, peak+pk
	}
	return rss, peak, nil
}

// peaks is each one's peak RSS.
func (p procs) peaks() ([]ProcPeak, error) {
	var out []ProcPeak
	for _, c := range p {
		_, pk, err := procRSS(c.pid())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		out = append(out, ProcPeak{Name: c.name, PeakMiB: mib(pk)})
	}
	return out, nil
}

// stop stops them all.
func (p procs) stop(timeout time.Duration) {
	for _, c := range p {
		c.stop(timeout)
	}
}

// startAll starts one child per entry of args (name and arguments), all at
// once, and waits up to wait until each is ready; on any failure it stops
// them all.
func startAll(ctx context.Context, wait time.Duration, bin, marker string, names []string, args [][]string) (procs, error) {
	var p procs
	for i := range args {
		c, err := startChild(names[i], marker, bin, args[i]...)
		if err != nil {
			p.stop(stopTimeout)
			return nil, err
		}
		p = append(p, c)
	}
	var errs []error
	for _, c := range p {
		errs = append(errs, c.waitReady(ctx, wait))
	}
	if err := errors.Join(errs...); err != nil {
		p.stop(stopTimeout)
		return nil, err
	}
	return p, nil
}

// niced is bin and args run at niceness n (by nice(1), which execs bin in
// its own process: the child's pid stays the one measured); n 0 leaves
// them as they are.
func niced(n int, bin string, args [][]string) (string, [][]string) {
	if n <= 0 {
		return bin, args
	}
	out := make([][]string, len(args))
	for i, a := range args {
		out[i] = append([]string{"-n", strconv.Itoa(n), bin}, a...)
	}
	return "nice", out
}

// freePorts returns n TCP ports free on 127.0.0.1 right now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("bench: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// peerReady is what ccm-broker prints once it listens.
const peerReady = "broker listening on"

// cluster is the plan of a site of several brokers: this process's broker
// is the first, the others are ccm-broker children.
type cluster struct {
	clientPorts, routePorts []int
}

// planCluster picks the ports of k brokers.
func planCluster(k int) (*cluster, error) {
	ports, err := freePorts(2 * k)
	if err != nil {
		return nil, err
	}
	return &cluster{clientPorts: ports[:k], routePorts: ports[k:]}, nil
}

func (c *cluster) routes() []string {
	var out []string
	for _, p := range c.routePorts {
		out = append(out, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	return out
}

func (c *cluster) url(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.clientPorts[i]) }

// startPeers starts brokers 2..k as children with their stores below dir.
func (b *bencher) startPeers(ctx context.Context, c *cluster, dir string) (procs, error) {
	if b.cfg.BrokerBin == "" {
		return nil, fmt.Errorf("bench: %d brokers are needed and no ccm-broker binary was given", len(c.clientPorts))
	}
	var names []string
	var args [][]string
	for i := 1; i < len(c.clientPorts); i++ {
		names = append(names, fmt.Sprintf("broker bench-%d", i+1))
		store := fmt.Sprintf("%s/store-%d", dir, i+1)
		if err := os.MkdirAll(store, 0o700); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		a := []string{"--name", fmt.Sprintf("bench-%d", i+1),
			"--listen", fmt.Sprintf("127.0.0.1:%d", c.clientPorts[i]), "--store", store,
			"--cluster-name", "bench", "--cluster-listen", fmt.Sprintf("127.0.0.1:%d", c.routePorts[i]),
			"--routes", strings.Join(c.routes(), ","), "--replicas", "1"}
		if b.cfg.ProfileDir != "" {
			a = append(a, "--cpuprofile", filepath.Join(b.cfg.ProfileDir, fmt.Sprintf("%s-broker-%d.pprof", filepath.Base(dir), i+1)))
		}
		args = append(args, a)
	}
	return startAll(ctx, deadlinesFor(0).start, b.cfg.BrokerBin, peerReady, names, args)
}
