package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/bench"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/protocol"
)

// benchFlags are the flags of ccm-bench run.
type benchFlags struct {
	agents, registry []string
	rows             []string
	cfg              bench.Config
	out, profileDir  string
}

func (a *app) registerRun(cli *fisk.Application) {
	f := &benchFlags{}
	cmd := cli.Command("run", "Measure fleet runs against the raw NATS floor on an embedded broker with simulated agents, and print a table (the default command: ccm-bench --agents ... is ccm-bench run --agents ...)").Default()
	cmd.Flag("agents", "Fleet sizes to measure (comma separated or repeated)").Default("100,1000,5000").StringsVar(&f.agents)
	cmd.Flag("rounds", "Timed rounds per fleet row").Default(strconv.Itoa(bench.DefaultRounds)).IntVar(&f.cfg.Rounds)
	cmd.Flag("registry-entries", "Node registry sizes to time discovery over (comma separated or repeated; 0 skips)").Default("1000,10000").StringsVar(&f.registry)
	cmd.Flag("latency-requests", "Single requests timed for the latency rows").Default(strconv.Itoa(bench.DefaultLatencyRequests)).IntVar(&f.cfg.LatencyRequests)
	cmd.Flag("idle-window", "How long the idle row watches each fleet at rest, after its setup (default one heartbeat, 30s)").Default(bench.DefaultIdleWindow.String()).DurationVar(&f.cfg.IdleWindow)
	cmd.Flag("one-host-rounds", "Runs of the cold ccm-agent ensure").Default(strconv.Itoa(bench.DefaultOneHostRounds)).IntVar(&f.cfg.OneHostRounds)
	cmd.Flag("rows", "Measure only these rows (comma separated or repeated): "+strings.Join(bench.RowNames, ", ")).PlaceHolder("NAME").StringsVar(&f.rows)
	cmd.Flag("sites", "Also measure the noop-sites row for every fleet size: its agents spread evenly over this many site brokers (ccm-broker leaf nodes of a hub in this process, each with its own JetStream domain), noop runs from the hub with exact accounting, compared with the one-cluster noop row (0: off)").Default("0").PlaceHolder("K").IntVar(&f.cfg.Sites)
	cmd.Flag("nice", "Run the simulated agents and the floors' responders at this niceness (1 to 19), below the brokers: a fleet larger than the machine's CPUs can serve otherwise starves its own brokers, which a real deployment runs on machines of their own (0: the bench's own priority)").Default("0").PlaceHolder("N").IntVar(&f.cfg.Nice)
	cmd.Flag("agent-bin", "The ccm-agent binary (default: next to this ccm-bench, else on PATH)").PlaceHolder("FILE").StringVar(&f.cfg.AgentBin)
	cmd.Flag("broker-bin", "The ccm-broker binary that runs the other brokers of a fleet too large for one process's open files, and the site brokers of --sites (default: next to this ccm-bench, else on PATH)").PlaceHolder("FILE").StringVar(&f.cfg.BrokerBin)
	cmd.Flag("orch-bin", "The ccm-orch binary the -cli rows time (default: next to this ccm-bench, else on PATH)").PlaceHolder("FILE").StringVar(&f.cfg.OrchBin)
	cmd.Flag("out", "Also write the rows as JSON to this file").PlaceHolder("FILE").StringVar(&f.out)
	cmd.Flag("work-dir", "Directory for brokers, agent state and managed files (default: a temporary directory)").PlaceHolder("DIR").StringVar(&f.cfg.WorkDir)
	cmd.Flag("profile-dir", "Write profiles here: CPU profiles bench.pprof (broker and library orchestrator), agents-N.pprof and, when a fleet needs a cluster, fleet-N-broker-I.pprof of its other brokers, and each agents process's heap profile agents-N.heap").PlaceHolder("DIR").StringVar(&f.profileDir)
	cmd.Action(func(*fisk.ParseContext) error { return a.runBench(f) })

	var ro bench.ResponderOptions
	resp := cli.Command(bench.RespondersCommand, "Plain NATS responders for the benchmark's floor (started by run)").Hidden()
	resp.Flag("server", "NATS server URL").Required().StringVar(&ro.Server)
	resp.Flag("count", "Responders, each with its own connection").Required().IntVar(&ro.Count)
	resp.Flag("subject", "Subject to answer on").Required().StringVar(&ro.Subject)
	resp.Flag("reply-bytes", "Size of each reply's body").Required().IntVar(&ro.ReplyBytes)
	resp.Flag("trust", "Verify every request's signature against this nkeys user public key and sign each reply (the signed floor)").PlaceHolder("KEY").StringVar(&ro.Trust)
	resp.Action(func(*fisk.ParseContext) error {
		ctx, stop := a.signalContext()
		defer stop()
		if err := bench.Responders(ctx, ro, a.Stdout); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		return nil
	})
}

func (a *app) runBench(f *benchFlags) error {
	var err error
	if f.cfg.Sizes, err = intList("--agents", f.agents); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if f.cfg.RegistrySizes, err = intList("--registry-entries", f.registry); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if len(f.cfg.RegistrySizes) == 0 || f.cfg.RegistrySizes[0] == 0 {
		f.cfg.RegistrySizes = []int{-1}
	}
	for _, r := range f.rows {
		for n := range strings.SplitSeq(r, ",") {
			if n = strings.TrimSpace(n); n != "" {
				f.cfg.Rows = append(f.cfg.Rows, n)
			}
		}
	}
	// The harness starts its floor responders through this binary, and
	// times the ccm-orch and ccm-agent found beside it.
	if f.cfg.BenchBin, err = os.Executable(); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if real, err := filepath.EvalSymlinks(f.cfg.BenchBin); err == nil {
		f.cfg.BenchBin = real
	}
	if f.cfg.AgentBin == "" {
		f.cfg.AgentBin = siblingBinary(f.cfg.BenchBin, "ccm-agent")
	}
	if f.cfg.OrchBin == "" {
		f.cfg.OrchBin = siblingBinary(f.cfg.BenchBin, "ccm-orch")
	}
	if f.cfg.BrokerBin == "" {
		f.cfg.BrokerBin = siblingBinary(f.cfg.BenchBin, "ccm-broker")
	}
	f.cfg.Log = a.Stderr
	if f.profileDir != "" {
		f.cfg.ProfileDir = f.profileDir
		if err := os.MkdirAll(f.profileDir, 0o755); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		stopProfile, err := program.StartCPUProfile(filepath.Join(f.profileDir, "bench.pprof"))
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		defer stopProfile()
	}
	ctx, stop := a.signalContext()
	defer stop()
	rows, runErr := bench.Run(ctx, f.cfg)
	bench.PrintTable(a.Stdout, rows)
	if f.out != "" && len(rows) > 0 {
		if err := bench.WriteJSON(f.out, rows); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		fmt.Fprintf(a.Stderr, "wrote %s\n", f.out)
	}
	if runErr != nil {
		return program.Exit(protocol.ExitError, runErr)
	}
	return nil
}

// intList parses repeated or comma separated whole numbers.
func intList(flag string, vals []string) ([]int, error) {
	var out []int
	for _, v := range vals {
		for s := range strings.SplitSeq(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s %q: use whole numbers, comma separated", flag, s)
			}
			out = append(out, n)
		}
	}
	return out, nil
}

// siblingBinary is name in the directory of self when it exists there,
// else name as found on PATH (or just name).
func siblingBinary(self, name string) string {
	p := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return name
}
