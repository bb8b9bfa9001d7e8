package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

// runReport counts a manifest run's events the way CCM's run summary
// does: resources the run never reached (manifest.NotApplied) are left
// out; each other event is failed, else skipped, else changed (under noop:
// would change), else stable; refreshes, unmet requirements and health
// checks by status are counted besides; every failed event is an error.
// unique counts the distinct TYPE#NAME (the session report's line).
type runReport struct {
	took                                                  time.Duration
	total, unique                                         int
	stable, changed, failed, skipped, refreshed           int
	unmet, checked, checkOK, checkWarn, checkCrit, checkX int
	errors                                                int
}

func newRunReport(events []*protocol.TransactionEvent, took time.Duration) runReport {
	r := runReport{took: took}
	unique := map[string]bool{}
	for _, ev := range events {
		if manifest.NotApplied(ev) {
			// CCM stops at fail_on_error and counts no more.
			continue
		}
		r.total++
		unique[ev.ResourceID()] = true
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
	r.unique = len(unique)
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
	r.writeChecks(w)
	fmt.Fprintf(w, "         Total Errors: %d\n", r.errors)
}

// writeChecks prints the unmet requirements and the health checks by
// status, as CCM's run summary does.
func (r runReport) writeChecks(w io.Writer) {
	fmt.Fprintf(w, "   Unmet Requirements: %d\n", r.unmet)
	if r.checked > 0 {
		fmt.Fprintf(w, "    Checked Resources: %d (ok: %d, critical: %d, warning: %d unknown: %d)\n", r.checked, r.checkOK, r.checkCrit, r.checkWarn, r.checkX)
	} else {
		fmt.Fprintf(w, "    Checked Resources: %d\n", r.checked)
	}
}

// writeSession prints the report in the layout of CCM's session report
// ("Session Summary"): the run summary's counts with unique resources, and
// the run time only when above zero, as CCM's cmd/session.go prints them;
// then, beyond CCM's session report (its summary holds them, it does not
// print them), the run summary's unmet requirements and health checks by
// status, in the run summary's words.
func (r runReport) writeSession(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Session Summary")
	fmt.Fprintln(w)
	if r.took > 0 {
		fmt.Fprintf(w, "             Run Time: %v\n", r.took.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "      Total Resources: %d\n", r.total)
	fmt.Fprintf(w, "     Unique Resources: %d\n", r.unique)
	fmt.Fprintf(w, "     Stable Resources: %d\n", r.stable)
	fmt.Fprintf(w, "    Changed Resources: %d\n", r.changed)
	fmt.Fprintf(w, "     Failed Resources: %d\n", r.failed)
	fmt.Fprintf(w, "    Skipped Resources: %d\n", r.skipped)
	fmt.Fprintf(w, "  Refreshed Resources: %d\n", r.refreshed)
	r.writeChecks(w)
	fmt.Fprintf(w, "         Total Errors: %d\n", r.errors)
}
