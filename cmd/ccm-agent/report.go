package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// runReport counts a manifest run's events the way CCM's run summary
// does: each event is failed, else skipped, else changed (under noop:
// would change), else stable; refreshes, unmet requirements and health
// checks by status are counted besides; every failed event is an error.
type runReport struct {
	took                                                  time.Duration
	total, stable, changed, failed, skipped, refreshed    int
	unmet, checked, checkOK, checkWarn, checkCrit, checkX int
	errors                                                int
}

func newRunReport(events []*protocol.TransactionEvent, took time.Duration) runReport {
	r := runReport{took: took}
	for _, ev := range events {
		r.total++
		switch {
		case ev.Failed:
			r.failed++
			r.errors++
		case ev.Skipped:
			r.skipped++
		case ev.Changed:
			r.changed++
		default:
			r.stable++
		}
		if ev.Refreshed {
			r.refreshed++
		}
		r.unmet += len(ev.UnmetRequirements)
		for _, hc := range ev.HealthChecks {
			if hc == nil {
				continue
			}
			r.checked++
			switch hc.Status {
			case protocol.HealthOK:
				r.checkOK++
			case protocol.HealthWarning:
				r.checkWarn++
			case protocol.HealthCritical:
				r.checkCrit++
			default:
				r.checkX++
			}
		}
	}
	return r
}

// write prints the report in CCM's layout ("Manifest Run Summary").
func (r runReport) write(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Manifest Run Summary")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "             Run Time: %v\n", r.took.Round(time.Millisecond))
	fmt.Fprintf(w, "      Total Resources: %d\n", r.total)
	fmt.Fprintf(w, "     Stable Resources: %d\n", r.stable)
	fmt.Fprintf(w, "    Changed Resources: %d\n", r.changed)
	fmt.Fprintf(w, "     Failed Resources: %d\n", r.failed)
	fmt.Fprintf(w, "    Skipped Resources: %d\n", r.skipped)
	fmt.Fprintf(w, "  Refreshed Resources: %d\n", r.refreshed)
	fmt.Fprintf(w, "   Unmet Requirements: %d\n", r.unmet)
	if r.checked > 0 {
		fmt.Fprintf(w, "    Checked Resources: %d (ok: %d, critical: %d, warning: %d unknown: %d)\n", r.checked, r.checkOK, r.checkCrit, r.checkWarn, r.checkX)
	} else {
		fmt.Fprintf(w, "    Checked Resources: %d\n", r.checked)
	}
	fmt.Fprintf(w, "         Total Errors: %d\n", r.errors)
}
