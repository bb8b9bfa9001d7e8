package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// hostDir is each host's directory below a fleet's files directory, as
// its own /etc would be.
const hostDir = "{{ lookup('facts.identity') }}"

// fileSpec is the resource every fleet row ensures: one file per host, in
// the host's own directory (templated from its identity).
type fileSpec struct {
	path, content, owner, group string
	// key is the seed file ccm-orch signs with
	key string
	// reply is the reply and discovery deadline
	reply time.Duration
	// directory ensures the host's directory instead of the file
	directory bool
}

func (b *bencher) fileSpec(dir, content string) fileSpec {
	return fileSpec{path: filepath.Join(dir, hostDir, "motd"), content: content, owner: b.owner, group: b.group, key: b.sign.seedFile,
		reply: deadlinesFor(0).reply}
}

// properties are the ensure request's properties, as ccm-orch sends them.
func (f fileSpec) properties() map[string]any {
	if f.directory {
		return map[string]any{"name": filepath.Dir(f.path), "ensure": "directory", "owner": f.owner, "group": f.group, "mode": "0755"}
	}
	return map[string]any{"name": f.path, "content": f.content, "owner": f.owner, "group": f.group, "mode": "0644"}
}

// request is the library call of the row.
func (f fileSpec) request(noop bool, mode orchestrator.DiscoveryMode) (orchestrator.Request, error) {
	ens, err := protocol.NewEnsureRequest("file", f.properties())
	if err != nil {
		return orchestrator.Request{}, err
	}
	return orchestrator.Request{Ensure: ens, Noop: noop, Discovery: mode, Timeout: f.reply, DiscoveryTimeout: f.reply}, nil
}

// args is the ccm-orch command line of the row.
func (f fileSpec) args(url string, noop bool, mode orchestrator.DiscoveryMode) []string {
	a := []string{"ensure", "file", f.path, "--content", f.content, "--owner", f.owner, "--group", f.group,
		"--mode", "0644", "--discovery", string(mode), "--reply-timeout", f.reply.String(),
		"--discovery-timeout", f.reply.String(), "--server", url, "--key", f.key}
	if noop {
		a = append(a, "--noop")
	}
	return a
}

// fleetRow describes one fleet row.
type fleetRow struct {
	name   string
	mode   orchestrator.DiscoveryMode
	cli    bool
	change bool
	// setup applies the noop rows' content for real (not timed); with
	// directory, the hosts' directories
	setup, directory bool
}

// noop reports whether the row's runs are dry runs.
func (r fleetRow) noop() bool { return !r.change && !r.setup }

var fleetRows = []fleetRow{
	{name: "noop", mode: orchestrator.DiscoveryRegistry},
	{name: "noop", mode: orchestrator.DiscoveryBroadcast},
	{name: "noop-cli", mode: orchestrator.DiscoveryRegistry, cli: true},
	{name: "noop-cli", mode: orchestrator.DiscoveryBroadcast, cli: true},
	{name: "change", mode: orchestrator.DiscoveryRegistry, change: true},
	{name: "change-cli", mode: orchestrator.DiscoveryRegistry, cli: true, change: true},
}

// fleetRun is one size's broker, agents and orchestrator.
type fleetRun struct {
	b      *bencher
	s      *site
	n      int
	agents procs
	client *orchestrator.Client
	files  string
	// version makes the content of every change round differ.
	version int
	// lastNoop is the id of the last noop run, for the history rows.
	lastNoop string
	// stored are the times from a noop run's request being sent to its
	// last reply being in the history stream.
	stored samples
}

// fleet measures one fleet size: the floor and the signed floor, then
// every fleet row, then
// the history rows and the agents' footprint.
func (b *bencher) fleet(ctx context.Context, n int) ([]Row, error) {
	lay := layoutFor(n, b.fdLimit)
	if lay.brokers > 1 || lay.agentProcs > 1 {
		b.logf("%d: %d brokers, %d agent processes, %d responder processes (each process may open %d files)", n, lay.brokers, lay.agentProcs, lay.responderProcs, b.fdLimit)
	}
	s, dir, err := b.openSite(ctx, fmt.Sprintf("fleet-%d", n), deadlinesFor(n).registryTTL, lay.brokers)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	s.dl = deadlinesFor(n)

	b.logf("%d: floor", n)
	floor, err := b.floor(ctx, s, n)
	if err != nil {
		return nil, err
	}
	floor.perHost()
	rows := []Row{floor}

	b.logf("%d: floor-signed", n)
	signed, err := b.floorSigned(ctx, s, n)
	signed.perHost()
	signed.ratios(&floor, nil)
	rows = append(rows, signed)
	if err != nil {
		return rows, err
	}

	b.logf("%d: starting agents", n)
	start := time.Now()
	agents, err := b.startAgents(ctx, s, dir, n)
	if err != nil {
		return rows, err
	}
	defer agents.stop(stopTimeout)
	// An agent serves even when its first registry write failed (under
	// the load of thousands starting at once some do; it retries a second
	// later), and registry discovery would then miss it.
	if err := s.waitRegistered(ctx, n); err != nil {
		return rows, err
	}
	startup := time.Since(start)
	f := &fleetRun{b: b, s: s, n: n, agents: agents, client: b.sign.client(s.nc), files: filepath.Join(dir, "files")}
	if err := f.setup(ctx); err != nil {
		return rows, err
	}
	if b.cfg.wants("idle") {
		b.logf("%d: idle (%s)", n, b.cfg.IdleWindow)
		idle, err := f.idle(ctx)
		rows = append(rows, idle)
		if err != nil {
			return rows, err
		}
	}
	for _, spec := range fleetRows {
		if !b.cfg.wants(spec.name) && !(spec.name == "noop" && spec.mode == orchestrator.DiscoveryRegistry && b.cfg.wants("history-write", "history-show", "history-show-cli")) {
			continue
		}
		b.logf("%d: %s (%s)", n, spec.name, spec.mode)
		row, err := f.measure(ctx, spec)
		row.perHost()
		row.ratios(&floor, &signed)
		rows = append(rows, row)
		if err != nil {
			return rows, err
		}
	}
	if b.cfg.wants("history-write", "history-show", "history-show-cli") {
		b.logf("%d: history", n)
		hist, err := f.historyRows(ctx)
		rows = append(rows, hist...)
		if err != nil {
			return rows, err
		}
	}
	rss, peak, err := agents.rss()
	if err != nil {
		return rows, err
	}
	cpu := agents.cpu()
	peaks, err := f.peaks()
	if err != nil {
		return rows, err
	}
	rows = append(rows, Row{
		Name: "agents", Agents: n, Rounds: 1, MedianMS: ms(startup), P90MS: ms(startup),
		AgentsCPUSeconds: round3(cpu.Seconds()),
		AgentsRSSMiB:     mib(rss), AgentsPeakRSSMiB: mib(peak), AgentRSSKiB: round3(float64(rss) / 1024 / float64(n)),
		Note:  "time to start, serve and be in the registry; RSS after every row, CPU over the whole size",
		Peaks: peaks,
	})
	return rows, nil
}

// setup creates the files directory and every host's directory and file:
// the steady state the noop rows find.
func (f *fleetRun) setup(ctx context.Context) error {
	if err := os.MkdirAll(f.files, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for _, setup := range []fleetRow{
		{name: "setup", mode: orchestrator.DiscoveryRegistry, setup: true, directory: true},
		{name: "setup", mode: orchestrator.DiscoveryRegistry, setup: true},
	} {
		if _, err := f.libraryRound(ctx, setup); err != nil {
			return fmt.Errorf("fleet %d setup: %w", f.n, err)
		}
	}
	return nil
}

// idle measures the fleet at rest for the idle window, after setup and
// before any timed row: what the agents and the center spend with no
// request (registry heartbeats, assignment feeds, history left to write).
// Every fleet row's CPU includes this background for as long as its round
// lasts, which is what makes it weigh on a large fleet's slow rounds.
func (f *fleetRun) idle(ctx context.Context) (Row, error) {
	window := f.b.cfg.IdleWindow
	row := Row{Name: "idle", Agents: f.n, Rounds: 1, MedianMS: ms(window), P90MS: ms(window)}
	cpu0, agentsCPU0 := f.s.centralCPU(), f.agents.cpu()
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return row, fmt.Errorf("idle %d: %w", f.n, ctx.Err())
	case <-t.C:
	}
	agents, central := f.agents.cpu()-agentsCPU0, f.s.centralCPU()-cpu0
	row.AgentsCPUSeconds = round3(agents.Seconds())
	row.BenchCPUSeconds = round3(central.Seconds())
	row.perHost()
	row.Note = idleNote(window, agents, central, f.n)
	return row, nil
}

// idleNote says what an idle row's CPU means per second and per host.
func idleNote(window, agents, central time.Duration, n int) string {
	perSec := func(d time.Duration) float64 { return d.Seconds() / window.Seconds() }
	return fmt.Sprintf("at rest for %s, no request: the agents kept %.3f cores busy (%.1f µs per host per second), the center %.3f cores; every fleet row's CPU includes this for the length of its rounds",
		window, perSec(agents), perSec(agents)*1e6/float64(max(n, 1)), perSec(central))
}

// floor times plain responders answering a request-sized message.
func (b *bencher) floor(ctx context.Context, s *site, n int) (Row, error) {
	row := Row{Name: "floor", Agents: n}
	resp, err := b.startResponders(ctx, s, n)
	if err != nil {
		return row, err
	}
	defer resp.stop(stopTimeout)
	request := make([]byte, b.requestBytes)
	for i := range request {
		request[i] = 'x'
	}
	var got samples
	cpu0 := s.centralCPU()
	agentsCPU0 := resp.cpu()
	for i := range b.cfg.Rounds + 1 {
		d, err := s.floorRound(ctx, request, n)
		if err != nil {
			return row, err
		}
		if i > 0 { // the first round warms up
			got = append(got, d)
		}
	}
	got.stats(&row)
	row.BenchCPUSeconds = round3((s.centralCPU() - cpu0).Seconds() / float64(b.cfg.Rounds+1))
	row.AgentsCPUSeconds = round3((resp.cpu() - agentsCPU0).Seconds() / float64(b.cfg.Rounds+1))
	return row, nil
}

// measure runs one fleet row: a warm-up round, then the timed rounds.
func (f *fleetRun) measure(ctx context.Context, spec fleetRow) (Row, error) {
	row := Row{Name: spec.name, Agents: f.n, Discovery: string(spec.mode)}
	round := f.libraryRound
	if spec.cli {
		round = f.cliRound
	}
	if _, err := round(ctx, spec); err != nil {
		return row, fmt.Errorf("%s %d warm-up: %w", spec.name, f.n, err)
	}
	var (
		got samples
		cli processRuns
	)
	cpu0 := f.s.centralCPU()
	agentsCPU0 := f.agents.cpu()
	row.Replied = -1
	for range f.b.cfg.Rounds {
		r, err := round(ctx, spec)
		if row.Replied < 0 || r.replied < row.Replied {
			row.Replied = r.replied
		}
		row.Unexpected = max(row.Unexpected, r.unexpected)
		if err != nil {
			row.Errors++
			row.Note = err.Error()
			continue
		}
		got = append(got, r.wall)
		if spec.cli {
			cli.add(r)
		}
	}
	row.Replied = max(row.Replied, 0)
	got.stats(&row)
	rounds := float64(f.b.cfg.Rounds)
	row.BenchCPUSeconds = round3((f.s.centralCPU() - cpu0).Seconds() / rounds)
	row.AgentsCPUSeconds = round3((f.agents.cpu() - agentsCPU0).Seconds() / rounds)
	if spec.cli {
		cli.fill(&row)
	}
	return row, nil
}

// libraryRound runs the row's request through the orchestrator library
// in this process and waits for its history records.
func (f *fleetRun) libraryRound(ctx context.Context, spec fleetRow) (run, error) {
	req, err := f.spec(spec).request(spec.noop(), spec.mode)
	if err != nil {
		return run{}, err
	}
	var sent time.Time
	req.Progress = func(int, int) {
		if sent.IsZero() {
			sent = time.Now()
		}
	}
	limit := f.s.dl.round
	if spec.setup {
		// The setup rounds prepare the hosts and are not measured: a
		// large fleet on a saturated machine may take longer than a
		// timed round may.
		req.Timeout, limit = f.s.dl.setup, f.s.dl.setup+time.Minute
	}
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	res, err := f.client.Run(rctx, req)
	wall := time.Since(start)
	if res != nil && len(res.Expected) > 0 { // nothing is recorded when nobody matched
		f.s.history += uint64(len(res.Expected)) + 1
	}
	if err != nil {
		return run{}, err
	}
	stored, serr := f.s.settle(ctx)
	acct := run{replied: res.Replied, unexpected: len(res.Unexpected)}
	if err := f.check(spec, res.ExitCode, res.Replied, res.Summary.Hosts, len(res.Unexpected)); err != nil {
		for _, g := range res.Groups {
			if g.Outcome == "failed" || g.Outcome == orchestrator.GroupError {
				err = fmt.Errorf("%w; %d hosts: %.300s", err, g.Count, g.Message)
				break
			}
		}
		return acct, err
	}
	if serr != nil {
		return run{}, serr
	}
	if spec.noop() && spec.mode == orchestrator.DiscoveryRegistry {
		f.lastNoop = res.RequestID
		f.stored = append(f.stored, stored.Sub(sent))
	}
	acct.wall = wall
	return acct, nil
}

// cliRound runs the row's request as a ccm-orch process and waits for
// its history records.
func (f *fleetRun) cliRound(ctx context.Context, spec fleetRow) (run, error) {
	rctx, cancel := context.WithTimeout(ctx, f.s.dl.round)
	defer cancel()
	r, err := runProcess(rctx, os.Environ(), f.b.cfg.OrchBin, f.spec(spec).args(f.s.url, spec.noop(), spec.mode)...)
	if err != nil {
		return r, err
	}
	sum, err := parseSummary(r.stdout)
	if err != nil {
		return r, fmt.Errorf("ccm-orch exited %d: %s (%w)", r.code, r.errText, err)
	}
	r.replied, r.unexpected = sum.replied, sum.unexpected
	if sum.expected > 0 {
		f.s.history += uint64(sum.expected) + 1
	}
	if _, err := f.s.settle(ctx); err != nil {
		return r, err
	}
	return r, f.check(spec, protocol.ExitCode(r.code), sum.replied, sum.hosts, sum.unexpected)
}

// peaks is the peak RSS of every process of the fleet: this one (a
// broker and the library orchestrator), the other brokers and the
// simulated agents' processes.
func (f *fleetRun) peaks() ([]ProcPeak, error) {
	_, self, err := procRSS(os.Getpid())
	if err != nil {
		return nil, err
	}
	out := []ProcPeak{{Name: "ccm-bench (broker and orchestrator)", PeakMiB: mib(self)}}
	for _, p := range []procs{f.s.peers, f.agents} {
		pk, err := p.peaks()
		if err != nil {
			return nil, err
		}
		out = append(out, pk...)
	}
	return out, nil
}

// spec is the row's resource; change rows get new content every round.
func (f *fleetRun) spec(spec fleetRow) fileSpec {
	content := "managed by the bench\n"
	if spec.change {
		f.version++
		content = fmt.Sprintf("managed by the bench, version %d\n", f.version)
	}
	fs := f.b.fileSpec(f.files, content)
	fs.directory = spec.directory
	fs.reply = f.s.dl.reply
	return fs
}

// check verifies a run's answer: everyone replied, nothing unexpected,
// every host ok (noop) or changed (change).
func (f *fleetRun) check(spec fleetRow, code protocol.ExitCode, replied int, hosts orchestrator.HostCounts, unexpected int) error {
	want := hosts.OK
	if spec.change {
		want = hosts.Changed
	}
	if code != protocol.ExitOK || replied != f.n || unexpected != 0 || (!spec.setup && want != f.n) {
		return fmt.Errorf("%s: exit %d, %d of %d replied, %d unexpected, hosts %+v", spec.name, code, replied, f.n, unexpected, hosts)
	}
	return nil
}

// summaryLine is ccm-orch's summary line of an ensure run.
var summaryLine = regexp.MustCompile(`(?m)^(\d+) expected, (\d+) replied: (\d+) ok, (\d+) changed, (?:(\d+) would change, )?(\d+) failed, (\d+) no reply`)

// summary is what a ccm-orch run printed about its hosts.
type summary struct {
	expected, replied, unexpected int
	hosts                         orchestrator.HostCounts
}

// parseSummary reads ccm-orch's text output: the summary line and the
// heading of the hosts that replied without being asked.
func parseSummary(out []byte) (summary, error) {
	m := summaryLine.FindSubmatch(out)
	if m == nil {
		return summary{}, fmt.Errorf("no summary line in %.200q", out)
	}
	n := make([]int, len(m))
	for i := 1; i < len(m); i++ {
		n[i], _ = strconv.Atoi(string(m[i]))
	}
	s := summary{expected: n[1], replied: n[2], hosts: orchestrator.HostCounts{OK: n[3], Changed: n[4], WouldChange: n[5], Failed: n[6], NoReply: n[7]}}
	if bytes.Contains(out, []byte("replied without being asked")) {
		s.unexpected = 1
	}
	return s, nil
}
