package ui

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// Runs page choices: how far back, which outcome, which kind of run and
// in which order.
var (
	runSinces   = []string{"1h", "24h", "7d", "30d"}
	runOutcomes = []string{orchestrator.OutcomeFailed, orchestrator.OutcomeNoReply, orchestrator.OutcomeWouldChange, orchestrator.OutcomeChanged, orchestrator.OutcomeOK}
	runKinds    = []string{kindPushed, kindScheduled}
	runOrders   = []string{"newest", "oldest", "worst"}
)

// Kinds of rows on the runs page.
const (
	// kindPushed is a request an operator sent (ensure, apply, audit).
	kindPushed = "pushed"
	// kindScheduled is the runs agents started for one assignment,
	// grouped into one row.
	kindScheduled = "scheduled"
)

// maxAssignmentRows bounds the single runs an assignment's page lists.
const maxAssignmentRows = 100

// runsQuery is what the runs page was asked for.
type runsQuery struct {
	Since      string `json:"since,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Order      string `json:"order"`
	Assignment string `json:"assignment,omitempty"`
	Error      string `json:"error,omitempty"`
}

// parseSince reads "1h", "90m" or "7d" as a duration.
func parseSince(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("since %q: a number of days such as 7d", v)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("since %q: a duration such as 1h, 30m or 7d", v)
	}
	return d, nil
}

// scheduledRuns are the runs of one assignment on the runs page: how
// many, on how many hosts, with which triggers and revisions, and the
// hosts' outcomes summed over them.
type scheduledRuns struct {
	Name string `json:"name"`
	// Filter is the selector of its newest run.
	Filter    string                  `json:"filter"`
	Revisions []uint64                `json:"revisions"`
	Runs      int                     `json:"runs"`
	Hosts     int                     `json:"hosts"`
	Triggers  map[string]int          `json:"triggers"`
	Outcomes  orchestrator.HostCounts `json:"host_outcomes"`
	First     time.Time               `json:"first"`
	Last      time.Time               `json:"last"`
	LatestID  string                  `json:"latest_request_id"`
	hosts     map[string]bool
}

// runListRow is one row of the runs page: a pushed run, or the runs of
// one assignment.
type runListRow struct {
	Kind       string         `json:"kind"`
	Time       time.Time      `json:"time"`
	Run        *runRow        `json:"run,omitempty"`
	Assignment *scheduledRuns `json:"assignment,omitempty"`
}

// counts are the host outcomes a row stands for.
func (r runListRow) counts() orchestrator.HostCounts {
	if r.Run != nil {
		return r.Run.Hosts
	}
	return r.Assignment.Outcomes
}

// runsData is the runs page: the runs in the history that pass its
// filters, pushed ones one a row and each assignment's in one row, in its
// order, one page of rows. With an assignment asked for, that
// assignment's runs are listed one a row.
type runsData struct {
	Query runsQuery    `json:"query"`
	Runs  int          `json:"runs"`
	Rows  []runListRow `json:"rows"`
	Pager pager        `json:"pager"`
}

type runsView struct {
	layout
	runsData
	SinceChoices, OutcomeChoices, KindChoices, OrderChoices []string
}

// matchOutcome says whether a run's host counts show outcome: at least
// one host with it, or for ok every host ok.
func matchOutcome(h orchestrator.HostCounts, outcome string) bool {
	switch outcome {
	case orchestrator.OutcomeFailed:
		return h.Failed > 0
	case orchestrator.OutcomeNoReply:
		return h.NoReply > 0
	case orchestrator.OutcomeWouldChange:
		return h.WouldChange > 0
	case orchestrator.OutcomeChanged:
		return h.Changed > 0
	case orchestrator.OutcomeOK:
		return h.OK > 0 && h.Failed+h.NoReply+h.WouldChange+h.Changed == 0
	}
	return true
}

// worst compares host counts, the worse first: more failed, then more
// without a reply, would change, changed.
func worst(a, b orchestrator.HostCounts) int {
	return cmp.Or(cmp.Compare(b.Failed, a.Failed), cmp.Compare(b.NoReply, a.NoReply),
		cmp.Compare(b.WouldChange, a.WouldChange), cmp.Compare(b.Changed, a.Changed))
}

func addCounts(a *orchestrator.HostCounts, b orchestrator.HostCounts) {
	a.OK += b.OK
	a.Changed += b.Changed
	a.Failed += b.Failed
	a.WouldChange += b.WouldChange
	a.NoReply += b.NoReply
}

func (s *Server) runsData(r *http.Request) runsData {
	q := r.URL.Query()
	v := runsData{Rows: []runListRow{}, Query: runsQuery{Since: q.Get("since"), Outcome: choice(r, "outcome", "", runOutcomes),
		Kind: choice(r, "kind", "", runKinds), Order: choice(r, "order", "newest", runOrders), Assignment: q.Get("assignment")}}
	now := s.opts.Now()
	var from time.Time
	if v.Query.Since != "" {
		d, err := parseSince(v.Query.Since)
		if err != nil {
			v.Query.Error = err.Error()
		} else {
			from = now.Add(-d)
		}
	}
	if v.Query.Assignment != "" {
		if err := protocol.ValidateAssignmentName(v.Query.Assignment); err != nil {
			v.Query.Error = protocol.AsError(err).Message
		}
	}
	var rows []runListRow
	groups := map[string]*scheduledRuns{}
	for _, ir := range s.fleet.index.AllRuns() {
		sum := ir.Summary
		name := ir.Request.Assignment
		switch {
		case v.Query.Error != "":
			continue
		case sum.Time.Before(from):
			continue
		case !matchOutcome(sum.Hosts, v.Query.Outcome):
			continue
		case v.Query.Assignment != "" && name != v.Query.Assignment:
			continue
		case v.Query.Kind == kindPushed && name != "", v.Query.Kind == kindScheduled && name == "":
			continue
		}
		v.Runs++
		if name == "" || v.Query.Assignment != "" {
			row := &runRow{HistorySummary: sum}
			if sum.Hosts.NoReply > 0 {
				row.Waiting = collecting(ir.Request.Created, time.Duration(ir.Request.Timeout), now)
			}
			kind := kindPushed
			if name != "" {
				kind = kindScheduled
				if len(ir.Request.Expected) == 1 { // an agent runs its assignment on itself
					row.Host = ir.Request.Expected[0]
				}
			}
			rows = append(rows, runListRow{Kind: kind, Time: sum.Time, Run: row})
			continue
		}
		g := groups[name]
		if g == nil {
			// The runs come newest first: the first one is the latest.
			g = &scheduledRuns{Name: name, Filter: sum.Filter, Triggers: map[string]int{}, hosts: map[string]bool{}, Last: sum.Time, LatestID: sum.RequestID}
			groups[name] = g
			rows = append(rows, runListRow{Kind: kindScheduled, Time: sum.Time, Assignment: g})
		}
		g.Runs++
		g.First = sum.Time
		g.Triggers[ir.Request.Trigger]++
		if !slices.Contains(g.Revisions, ir.Request.Revision) {
			g.Revisions = append(g.Revisions, ir.Request.Revision)
		}
		for _, h := range ir.Request.Expected {
			g.hosts[h] = true
		}
		addCounts(&g.Outcomes, sum.Hosts)
	}
	for _, g := range groups {
		g.Hosts = len(g.hosts)
		slices.Sort(g.Revisions)
	}
	switch v.Query.Order {
	case "oldest":
		slices.Reverse(rows)
	case "worst":
		slices.SortStableFunc(rows, func(a, b runListRow) int { return worst(a.counts(), b.counts()) })
	}
	per := runsPerPage
	if v.Query.Assignment != "" {
		per = maxAssignmentRows
	}
	v.Pager = newPager(r, pageNumber(r), len(rows), per)
	end := min(v.Pager.First+per, len(rows))
	v.Rows = append(v.Rows, rows[v.Pager.First:end]...)
	return v
}
