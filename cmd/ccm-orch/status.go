package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// statusStates is the order states are shown in, worst first.
var statusStates = []string{orchestrator.StateFailed, orchestrator.StateQuarantined, orchestrator.StateRefused, orchestrator.StateStale, orchestrator.StateDrift, orchestrator.StatePending, orchestrator.StateConverged}

// maxStatusHosts is how many identities one line names before "and N more".
const maxStatusHosts = 10

func (a *app) registerStatus(cli *fisk.Application) {
	var (
		flt  filterFlags
		tgt  targetFlags
		name string
		js   bool
		yml  bool
	)
	cmd := cli.Command("status", "Each assignment's state on the hosts it selects, as of each host's last run of that assignment, or of a later audit that found its resources would change: converged, drift, failed, quarantined, refused, pending, stale (exit 0 converged, 5 drift or stale, 2 failed or quarantined)")
	flt.register(cmd)
	tgt.register(cmd)
	cmd.Flag("assignment", "Only this assignment").PlaceHolder("NAME").StringVar(&name)
	cmd.Flag("json", "Print the report as JSON").BoolVar(&js)
	yamlFlag(cmd, &yml)
	conn := connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		if err := oneFormat(map[string]bool{"--json": js, "--yaml": yml}); err != nil {
			return err
		}
		f, err := flt.filter()
		if err != nil {
			return err
		}
		narrow, err := tgt.narrowing()
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		return a.withClient(conn, func(ctx context.Context, c *orchestrator.Client) error {
			if err := tgt.resolve(ctx, c, narrow); err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			rep, err := c.Status(ctx, orchestrator.StatusOptions{Filter: f, Assignment: name, Narrow: narrow})
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			renderSample(a.Stderr, rep.Sample)
			if js || yml {
				if err := a.printDoc(rep, yml); err != nil {
					return err
				}
			} else {
				renderStatus(a.Stdout, rep)
			}
			if rep.ExitCode != protocol.ExitOK {
				return program.Exit(rep.ExitCode, nil)
			}
			return nil
		})
	})
}

// renderStatus writes one block per assignment: a summary line, then one
// line per state and message naming the hosts.
func renderStatus(w io.Writer, rep *orchestrator.StatusReport) {
	if len(rep.Assignments) == 0 {
		fmt.Fprintln(w, "no assignments")
		return
	}
	for i, as := range rep.Assignments {
		if i > 0 {
			fmt.Fprintln(w)
		}
		mode := "apply"
		if as.Noop {
			mode = "audit"
		}
		counts := []string{}
		for _, s := range statusStates {
			if n := as.Counts[s]; n > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", n, s))
			}
		}
		summary := "no host selected"
		if len(as.Hosts) > 0 {
			summary = fmt.Sprintf("%d hosts: %s", len(as.Hosts), strings.Join(counts, ", "))
		}
		fmt.Fprintf(w, "%s r%d (%s, %s every %s): %s\n", as.Name, as.Revision, as.Selector, mode, as.Interval, summary)
		for _, s := range statusStates {
			groups := map[string][]string{}
			var order []string
			for _, h := range as.Hosts {
				if h.State != s {
					continue
				}
				msg := h.Message
				if s == orchestrator.StateDrift && msg == "" {
					msg = fmt.Sprintf("%d resources would change", h.Drift)
				}
				if h.Flapping != "" {
					msg = strings.TrimPrefix(msg+"; ", "; ") + "flapping: a watched file keeps changing, repairs backed off " + h.Flapping
				}
				if h.WatchFailures > 0 {
					msg = strings.TrimPrefix(msg+"; ", "; ") + fmt.Sprintf("watch repairs failed %d times (still watching), last at %s: %s",
						h.WatchFailures, h.WatchFailedAt.UTC().Format(time.RFC3339), h.WatchError)
				}
				if _, ok := groups[msg]; !ok {
					order = append(order, msg)
				}
				groups[msg] = append(groups[msg], h.Identity)
			}
			for _, msg := range order {
				hosts := groups[msg]
				slices.Sort(hosts)
				line := fmt.Sprintf("  %s: %s", s, namesList(hosts))
				if msg != "" {
					line += ": " + msg
				}
				fmt.Fprintln(w, line)
			}
		}
	}
}

// namesList names up to maxStatusHosts identities and counts the rest.
func namesList(ids []string) string {
	if len(ids) <= maxStatusHosts {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxStatusHosts], ", "), len(ids)-maxStatusHosts)
}
