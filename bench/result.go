package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one measured line of the results.
type Row struct {
	// Name says what was measured: floor, noop, noop-cli, change, ...
	Name string `json:"name"`
	// Agents is the fleet size (registry entries for registry-discovery,
	// hosts of the request for the history rows).
	Agents int `json:"agents"`
	// Sites is how many site brokers the agents were spread over (the
	// noop-sites row).
	Sites int `json:"sites,omitempty"`
	// Discovery is how the orchestrator found the hosts, when it did.
	Discovery string `json:"discovery,omitempty"`
	// Rounds is how many timed rounds the statistics are over.
	Rounds   int     `json:"rounds"`
	MedianMS float64 `json:"median_ms"`
	P90MS    float64 `json:"p90_ms"`
	P99MS    float64 `json:"p99_ms,omitempty"`
	MaxMS    float64 `json:"max_ms,omitempty"`
	// FloorRatio is MedianMS over the floor's median for the same size,
	// and SignedFloorRatio over the signed floor's (floor-signed).
	FloorRatio       float64 `json:"floor_ratio,omitempty"`
	SignedFloorRatio float64 `json:"signed_floor_ratio,omitempty"`
	// PeakRSSMiB is the peak RSS of the process the row runs (the most of
	// any round): ccm-orch for the -cli rows, ccm-agent for
	// agent-ensure-cli.
	PeakRSSMiB float64 `json:"peak_rss_mib,omitempty"`
	// CPUSeconds is that process's user+system CPU per round (median).
	CPUSeconds float64 `json:"cpu_s,omitempty"`
	// AgentsCPUSeconds is the simulated agents' process CPU per round
	// (average over the rounds).
	AgentsCPUSeconds float64 `json:"agents_cpu_s,omitempty"`
	// BenchCPUSeconds is the bench process's CPU per round: the broker,
	// plus the orchestrator for library-call rows.
	BenchCPUSeconds float64 `json:"bench_cpu_s,omitempty"`
	// AgentsRSSMiB is the agents' process RSS after the rows of its size,
	// AgentsPeakRSSMiB its peak, and AgentRSSKiB the RSS per agent.
	AgentsRSSMiB     float64 `json:"agents_rss_mib,omitempty"`
	AgentsPeakRSSMiB float64 `json:"agents_peak_rss_mib,omitempty"`
	AgentRSSKiB      float64 `json:"agent_rss_kib,omitempty"`
	// Replied is the fewest hosts that replied in any timed round and
	// Unexpected the most replies from hosts that were not asked: a fleet
	// row's accounting (exact when Replied is Agents and Unexpected 0).
	Replied    int `json:"replied,omitempty"`
	Unexpected int `json:"unexpected,omitempty"`
	// AgentCPUPerHostMS is the agents' CPU per round per host, and
	// CentralCPUPerHostMS the broker's and orchestrator's (the bench
	// process, plus ccm-orch for -cli rows), in milliseconds;
	// CentralFloorRatio is the latter over the floor's (broker and
	// requester) for the same size, and CentralSignedFloorRatio over the
	// signed floor's.
	AgentCPUPerHostMS       float64 `json:"agent_cpu_per_host_ms,omitempty"`
	CentralCPUPerHostMS     float64 `json:"central_cpu_per_host_ms,omitempty"`
	CentralFloorRatio       float64 `json:"central_floor_ratio,omitempty"`
	CentralSignedFloorRatio float64 `json:"central_signed_floor_ratio,omitempty"`
	// OneClusterRatio, on the noop-sites row, is its median over the
	// median of the noop row (registry discovery) of the same size and
	// run, measured on one cluster.
	OneClusterRatio float64 `json:"one_cluster_ratio,omitempty"`
	// RatePerSecond is a throughput (history records written per second).
	RatePerSecond float64 `json:"rate_per_s,omitempty"`
	// Errors counts rounds that did not give the expected answer; they are
	// not in the statistics.
	Errors int    `json:"errors,omitempty"`
	Note   string `json:"note,omitempty"`
	// Peaks, on the agents row, is each process's peak RSS over the
	// size's rows: this process (a broker and the library orchestrator),
	// the other brokers and every simulated agents process.
	Peaks []ProcPeak `json:"peaks,omitempty"`
}

// ProcPeak is one process's peak resident set size.
type ProcPeak struct {
	Name    string  `json:"name"`
	PeakMiB float64 `json:"peak_mib"`
}

// samples are durations of timed rounds.
type samples []time.Duration

// ms is d in milliseconds, rounded to microseconds.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// quantile is the q-quantile (nearest rank) of the samples, 0 when empty.
func (s samples) quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// stats fills the timing fields of r from the samples.
func (s samples) stats(r *Row) {
	r.Rounds = len(s)
	r.MedianMS = ms(s.quantile(0.5))
	r.P90MS = ms(s.quantile(0.9))
	if len(s) >= 100 {
		r.P99MS = ms(s.quantile(0.99))
	}
	r.MaxMS = ms(s.quantile(1))
}

// mib is bytes in MiB, two decimals.
func mib(bytes int64) float64 { return math.Round(float64(bytes)/(1<<20)*100) / 100 }

// round3 rounds to three decimals.
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// WriteJSON writes the rows to path as an indented JSON list, creating its
// directory.
func WriteJSON(path string, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return fmt.Errorf("bench results: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("bench results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench results: %w", err)
	}
	return nil
}

// PrintTable prints the rows as an aligned table.
func PrintTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tagents\tdiscovery\trounds\tmedian ms\tp90 ms\tp99 ms\tx floor\tx signed\treplied\tunexp\tproc rss MiB\tproc cpu s\tagents cpu s\tbench cpu s\tagent ms/host\tcentral ms/host\tcentral x floor\tcentral x signed\tagents rss MiB\trss/agent KiB\trate/s\terrors\t")
	for _, r := range rows {
		cols := []string{
			r.Name, num(float64(r.Agents)), r.Discovery, num(float64(r.Rounds)),
			num(r.MedianMS), num(r.P90MS), num(r.P99MS), num(r.FloorRatio), num(r.SignedFloorRatio),
			num(float64(r.Replied)), accounted(r), num(r.PeakRSSMiB), num(r.CPUSeconds), num(r.AgentsCPUSeconds), num(r.BenchCPUSeconds),
			num(r.AgentCPUPerHostMS), num(r.CentralCPUPerHostMS), num(r.CentralFloorRatio), num(r.CentralSignedFloorRatio),
			num(r.AgentsRSSMiB), num(r.AgentRSSKiB), num(r.RatePerSecond), num(float64(r.Errors)),
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	_ = tw.Flush()
	for _, r := range rows {
		if r.Note != "" {
			fmt.Fprintf(w, "%s (%d): %s\n", r.Name, r.Agents, r.Note)
		}
	}
}

// accounted is the unexpected column: the count, or 0 written out for a
// row with accounting (so a clean run says so), empty otherwise.
func accounted(r Row) string {
	if r.Replied == 0 && r.Unexpected == 0 {
		return ""
	}
	return fmt.Sprintf("%d", r.Unexpected)
}

// perHost fills the per-host CPU columns of a fleet row.
func (r *Row) perHost() {
	if r.Agents <= 0 {
		return
	}
	n := float64(r.Agents)
	r.AgentCPUPerHostMS = round4(r.AgentsCPUSeconds * 1000 / n)
	r.CentralCPUPerHostMS = round4((r.BenchCPUSeconds + r.CPUSeconds) * 1000 / n)
}

// ratios fills the row's ratios to its size's floor and signed floor
// (perHost first): wall time and central CPU per host. A floor that is nil
// or was not measured leaves its ratios zero.
func (r *Row) ratios(floor, signed *Row) {
	ratio := func(v, base float64) float64 {
		if v <= 0 || base <= 0 {
			return 0
		}
		return round3(v / base)
	}
	if floor != nil {
		r.FloorRatio = ratio(r.MedianMS, floor.MedianMS)
		r.CentralFloorRatio = ratio(r.CentralCPUPerHostMS, floor.CentralCPUPerHostMS)
	}
	if signed != nil {
		r.SignedFloorRatio = ratio(r.MedianMS, signed.MedianMS)
		r.CentralSignedFloorRatio = ratio(r.CentralCPUPerHostMS, signed.CentralCPUPerHostMS)
	}
}

// round4 rounds to four decimals.
func round4(f float64) float64 { return math.Round(f*10000) / 10000 }

// num formats a value for the table: empty for zero, few decimals.
func num(f float64) string {
	switch {
	case f == 0:
		return ""
	case f == math.Trunc(f) && math.Abs(f) < 1e9:
		return fmt.Sprintf("%d", int64(f))
	case math.Abs(f) >= 100:
		return fmt.Sprintf("%.0f", f)
	case math.Abs(f) >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return fmt.Sprintf("%.3g", f)
	}
}
