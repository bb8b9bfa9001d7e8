package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// Defaults of Config fields left zero.
var (
	DefaultSizes         = []int{100, 1000, 5000}
	DefaultRegistrySizes = []int{1000, 10000}
)

// More defaults.
const (
	DefaultRounds          = 10
	DefaultLatencyRequests = 1000
	DefaultOneHostRounds   = 30
	// MaxSize bounds a fleet size: what one orchestrator run may expect
	// (a larger fleet is spread over several simulate processes and
	// brokers, so the simulator's own limit per process does not bound it).
	MaxSize = protocol.MaxExpected
	// MaxRegistrySize bounds a registry size.
	MaxRegistrySize = 100000
	// MaxSites bounds Config.Sites.
	MaxSites = 64
	// MaxNice bounds Config.Nice (the lowest priority Linux has).
	MaxNice = 19
	// DefaultIdleWindow is how long the idle row watches a fleet at rest:
	// one default agent heartbeat, so every agent refreshes its registry
	// entry once in it.
	DefaultIdleWindow = 30 * time.Second
)

// Config says what to measure.
type Config struct {
	// Sizes are the fleet sizes; default DefaultSizes.
	Sizes []int
	// Rounds is how many timed rounds each fleet row runs; default 10.
	Rounds int
	// RegistrySizes are the node registry sizes discovery is timed over;
	// default DefaultRegistrySizes. A negative first size skips them.
	RegistrySizes []int
	// LatencyRequests is how many single requests the latency rows time;
	// default 1000.
	LatencyRequests int
	// OneHostRounds is how often the cold ccm-agent ensure runs; default 30.
	OneHostRounds int
	// AgentBin and OrchBin are the ccm-agent and ccm-orch binaries; the
	// -cli rows time OrchBin.
	AgentBin, OrchBin string
	// BenchBin is the binary that serves RespondersCommand (ccm-bench):
	// the floor's responders run as its child process.
	BenchBin string
	// BrokerBin is the ccm-broker binary, which runs the other brokers of
	// a fleet too large for one process's open files (see layoutFor);
	// needed only then.
	BrokerBin string
	// WorkDir holds the brokers' stores, the agents' state and the files
	// they manage; default a temporary directory, removed at the end.
	WorkDir string
	// ProfileDir, when set, receives a CPU profile of each simulated
	// agents process (agents-<size>.pprof) and its heap profile, written
	// when the process is stopped (agents-<size>.heap), and of each other
	// broker of a cluster (fleet-<size>-broker-<i>.pprof).
	ProfileDir string
	// MaxOpenFiles, when set, is taken as each process's open files limit
	// if it is lower than the real one: a small fleet is then spread over
	// processes and brokers as a large one would be (tests).
	MaxOpenFiles uint64
	// Rows, when not empty, limits the run to the rows of these names
	// (see RowNames); a step none of whose rows is asked for is skipped.
	// The floor and the signed floor of a fleet size are measured
	// whenever one of its rows is.
	Rows []string
	// Sites, when above 0, adds the noop-sites row to every fleet size:
	// the size's agents spread evenly over this many site brokers
	// (ccm-broker children, leaf nodes of a hub in this process, each
	// with its own JetStream domain), the orchestrator at the hub. Needs
	// BrokerBin, and no size below Sites.
	Sites int
	// IdleWindow is how long the idle row measures each fleet at rest;
	// default DefaultIdleWindow.
	IdleWindow time.Duration
	// Nice, when above 0, is the niceness (up to MaxNice) the simulated
	// agents and the floors' responders run at, below the brokers and the
	// orchestrator. A real deployment's brokers have machines of their
	// own; on one machine with more simulated hosts than it has CPUs for,
	// the hosts would otherwise take the brokers' CPU (at 50,000 agents on
	// 2 cores the JetStream cluster lost its meta leader while they
	// started). Both floors run niced too, so the ratios stay fair.
	Nice int
	// Log receives progress lines; default discard.
	Log io.Writer
}

// RowNames are the names of the rows Run can measure.
var RowNames = []string{
	"floor", "floor-signed", "noop", "noop-cli", "change", "change-cli", "history-write", "history-show", "history-show-cli", "agents",
	"idle", "noop-sites", "latency-nats", "latency-ensure", "latency-run", "agent-ensure-cli", "registry-discovery", "ui-fleet", "ui-runs",
}

// wants reports whether any of the named rows is asked for.
func (c Config) wants(names ...string) bool {
	if len(c.Rows) == 0 {
		return true
	}
	for _, n := range names {
		if slices.Contains(c.Rows, n) {
			return true
		}
	}
	return false
}

func (c Config) withDefaults() Config {
	if len(c.Sizes) == 0 {
		c.Sizes = DefaultSizes
	}
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	if len(c.RegistrySizes) == 0 {
		c.RegistrySizes = DefaultRegistrySizes
	}
	if c.LatencyRequests == 0 {
		c.LatencyRequests = DefaultLatencyRequests
	}
	if c.OneHostRounds == 0 {
		c.OneHostRounds = DefaultOneHostRounds
	}
	if c.IdleWindow <= 0 {
		c.IdleWindow = DefaultIdleWindow
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// validate checks a configuration after defaults.
func (c Config) validate() error {
	for _, n := range c.Sizes {
		if n < 1 || n > MaxSize {
			return fmt.Errorf("bench: fleet size %d must be between 1 and %d", n, MaxSize)
		}
	}
	for _, n := range c.RegistrySizes {
		if n > MaxRegistrySize {
			return fmt.Errorf("bench: registry size %d is more than %d", n, MaxRegistrySize)
		}
	}
	for _, r := range c.Rows {
		if !slices.Contains(RowNames, r) {
			return fmt.Errorf("bench: no row is called %q (rows: %s)", r, strings.Join(RowNames, ", "))
		}
	}
	switch {
	case c.Rounds < 1:
		return fmt.Errorf("bench: rounds %d must be positive", c.Rounds)
	case c.Nice < 0 || c.Nice > MaxNice:
		return fmt.Errorf("bench: nice %d must be between 0 (the bench's own priority) and %d", c.Nice, MaxNice)
	case c.LatencyRequests < 1 || c.OneHostRounds < 1:
		return errors.New("bench: latency requests and one-host rounds must be positive")
	case c.AgentBin == "" || c.OrchBin == "" || c.BenchBin == "":
		return errors.New("bench: the ccm-agent, ccm-orch and ccm-bench binaries are required")
	}
	for _, b := range []string{c.AgentBin, c.OrchBin, c.BenchBin} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("bench: %w (make build first)", err)
		}
	}
	return c.validateSites()
}

// validateSites checks the sites settings: a count the bench can start, a
// ccm-broker binary to run the site brokers, at least one agent per site,
// and the noop-sites row asked for only with sites.
func (c Config) validateSites() error {
	switch {
	case c.Sites < 0 || c.Sites > MaxSites:
		return fmt.Errorf("bench: sites %d must be between 0 (off) and %d", c.Sites, MaxSites)
	case c.Sites == 0 && slices.Contains(c.Rows, "noop-sites"):
		return errors.New("bench: the noop-sites row needs sites (ccm-bench --sites K)")
	case c.Sites == 0:
		return nil
	case c.BrokerBin == "":
		return errors.New("bench: sites need the ccm-broker binary (the site brokers run it)")
	}
	if _, err := os.Stat(c.BrokerBin); err != nil {
		return fmt.Errorf("bench: sites: %w (make build first)", err)
	}
	for _, n := range c.Sizes {
		if n < c.Sites {
			return fmt.Errorf("bench: fleet size %d is smaller than %d sites (each site needs an agent)", n, c.Sites)
		}
	}
	return nil
}

// Run measures what cfg asks for and returns the rows, in the order:
// per fleet size the floor, the signed floor and the fleet rows (with
// Config.Sites, noop-sites after them), then single request
// latency, the cold ccm-agent ensure, and registry discovery. When a part
// fails, the rows measured so far are returned with the error.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Each agent and responder has its own connection, and the broker
	// holds the other end of each; a fleet too large for one process's
	// open files is spread over several (see layoutFor).
	limit, err := raiseFileLimit(uint64(agentFDs*slices.Max(cfg.Sizes) + fdReserve))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	work := cfg.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "ccm-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer func() { _ = os.RemoveAll(d) }()
		work = d
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if cfg.MaxOpenFiles > 0 {
		limit = min(limit, cfg.MaxOpenFiles)
	}
	b := &bencher{cfg: cfg, work: work, owner: u.Username, group: g.Name, fdLimit: limit}
	if b.sign, err = newSigning(work); err != nil {
		return nil, err
	}
	if err := b.sampleSizes(); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "request %d bytes, reply %d bytes\n", b.requestBytes, b.replyBytes)

	var rows []Row
	steps := []func(context.Context) ([]Row, error){}
	if cfg.wants("floor", "floor-signed", "noop", "noop-cli", "change", "change-cli", "history-write", "history-show", "history-show-cli", "agents", "idle", "noop-sites") {
		for _, n := range cfg.Sizes {
			steps = append(steps, func(ctx context.Context) ([]Row, error) { return b.fleetAndSites(ctx, n) })
		}
	}
	if cfg.wants("latency-nats", "latency-ensure", "latency-run") {
		steps = append(steps, b.latency)
	}
	if cfg.wants("agent-ensure-cli") {
		steps = append(steps, b.oneHost)
	}
	if cfg.RegistrySizes[0] > 0 && cfg.wants("registry-discovery") {
		steps = append(steps, b.registry)
	}
	if cfg.wants("ui-fleet", "ui-runs") {
		steps = append(steps, b.uiRows)
	}
	for _, step := range steps {
		got, err := step(ctx)
		for _, r := range got {
			if cfg.wants(r.Name) {
				rows = append(rows, r)
			}
		}
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// bencher holds what the steps share.
type bencher struct {
	cfg          Config
	work         string
	owner, group string
	// fdLimit is each process's open files limit, which decides how a
	// fleet is spread over processes
	fdLimit uint64
	// requestBytes and replyBytes are the sizes of a fleet request and
	// of one host's reply to it, signature headers included, for the floor.
	requestBytes, replyBytes int
	// requestBody is the fleet noop request those sizes were taken from
	// (its JSON body, unsigned) and replyBodyBytes the reply's body size:
	// the signed floor sends them with real signature headers.
	requestBody    []byte
	replyBodyBytes int
	// sign signs every request; the agents' policy trusts it
	sign *signing
}

// logf prints a progress line.
func (b *bencher) logf(format string, args ...any) {
	fmt.Fprintf(b.cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// dir returns a fresh directory below the work directory.
func (b *bencher) dir(name string) (string, error) {
	d := filepath.Join(b.work, name)
	if err := os.RemoveAll(d); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return d, nil
}
