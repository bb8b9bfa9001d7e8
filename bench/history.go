package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"
)

// historyRows measures the history of the fleet's noop runs: how fast the
// agents' records were stored, and rebuilding the last run from history
// (library call and ccm-orch history show).
func (f *fleetRun) historyRows(ctx context.Context) ([]Row, error) {
	write := Row{Name: "history-write", Agents: f.n, Note: "from a noop request sent to its last reply stored in CCM_HISTORY; rate: records per second"}
	f.stored.stats(&write)
	if med := f.stored.quantile(0.5); med > 0 {
		write.RatePerSecond = math.Round(float64(f.n) / med.Seconds())
	}
	rows := []Row{write}
	if f.lastNoop == "" {
		return rows, nil
	}

	show := Row{Name: "history-show", Agents: f.n}
	var got samples
	cpu0 := selfCPU()
	for i := range f.b.cfg.Rounds + 1 {
		rctx, cancel := context.WithTimeout(ctx, f.s.dl.round)
		start := time.Now()
		h, err := f.client.History(rctx, f.lastNoop)
		d := time.Since(start)
		cancel()
		if err != nil {
			// A round that fails (JetStream briefly without a leader on a
			// loaded cluster) is counted, as a fleet round's would be.
			show.Errors++
			show.Note = fmt.Sprintf("history show: %v", err)
			continue
		}
		if h.Result.Replied != f.n {
			show.Errors++
			show.Note = fmt.Sprintf("%d of %d hosts in history", h.Result.Replied, f.n)
			continue
		}
		if i > 0 {
			got = append(got, d)
		}
	}
	got.stats(&show)
	show.BenchCPUSeconds = round3((selfCPU() - cpu0).Seconds() / float64(f.b.cfg.Rounds+1))
	rows = append(rows, show)

	cli := Row{Name: "history-show-cli", Agents: f.n}
	var runs processRuns
	for i := range f.b.cfg.Rounds + 1 {
		rctx, cancel := context.WithTimeout(ctx, f.s.dl.round)
		r, err := runProcess(rctx, os.Environ(), f.b.cfg.OrchBin, "history", "show", f.lastNoop, "--server", f.s.url)
		cancel()
		if err != nil {
			return append(rows, cli), fmt.Errorf("ccm-orch history show: %w", err)
		}
		if r.code != 0 {
			cli.Errors++
			cli.Note = fmt.Sprintf("ccm-orch history show exited %d: %s", r.code, r.errText)
			continue
		}
		if i > 0 {
			runs.add(r)
		}
	}
	runs.fill(&cli)
	return append(rows, cli), nil
}
