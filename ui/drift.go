package ui

import (
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

// Drift states of a host for one resource, the matrix's columns.
const (
	stateConverged = "converged"
	stateDrifted   = "drifted"
	stateFailed    = "failed"
	stateCritical  = "critical"
	stateStale     = "stale"
)

var driftStates = []string{stateConverged, stateDrifted, stateFailed, stateCritical, stateStale}

// critical says whether one of the event's health checks is CRITICAL.
func critical(ev *protocol.TransactionEvent) bool {
	for _, h := range ev.HealthChecks {
		if h != nil && h.Status == protocol.HealthCritical {
			return true
		}
	}
	return false
}

// maxCellHosts bounds the hosts a matrix cell lists.
const maxCellHosts = 50

// driftRow is one resource's hosts by state.
type driftRow struct {
	Resource string      `json:"resource"`
	Cells    []driftCell `json:"cells"`
}

type driftCell struct {
	State string   `json:"state"`
	Count int      `json:"count"`
	Hosts []string `json:"hosts"`
	More  int      `json:"more,omitempty"`
}

// dayRow is one day's host outcomes over the runs of that day.
type dayRow struct {
	Day         string `json:"day"`
	OK          int    `json:"ok"`
	Changed     int    `json:"changed"`
	Failed      int    `json:"failed"`
	WouldChange int    `json:"would_change"`
	NoReply     int    `json:"no_reply"`
}

// driftData is the drift page: per resource the hosts by state, and the
// host outcomes per day.
type driftData struct {
	States []string   `json:"states"`
	State  string     `json:"state,omitempty"`
	Rows   []driftRow `json:"resources"`
	Days   []dayRow   `json:"days"`
}

type driftView struct {
	layout
	driftData
	Chart template.HTML
}

// oneOff says whether a request ensures a resource of a type the catalog
// calls a one-off action (ccm-orch ensure exec): it has no state to drift
// from, so the drift page leaves it out.
func oneOff(r *protocol.HistoryRequest) bool {
	if r.Ensure == nil {
		return false
	}
	e, ok := catalog.Lookup(r.Ensure.Type)
	return ok && e.OneOff
}

// driftData shows, per resource (hosts' own names folded into <host> and
// <facts.KEY> as in reports), which hosts are converged, drifted, failed
// or stale by their last event, one-off commands left out, and the
// outcomes per day; with a state asked for, only the resources with a
// host in it.
func (s *Server) driftData(r *http.Request) driftData {
	v := driftData{States: driftStates, State: choice(r, "state", "", driftStates), Rows: []driftRow{}, Days: []dayRow{}}
	now := s.opts.Now()
	rows := map[string]map[string][]string{}
	for host, events := range s.fleet.index.LastEventsWhere(func(r *protocol.HistoryRequest) bool { return !oneOff(r) }) {
		n := s.fleet.node(host)
		var facts map[string]any
		if n != nil {
			facts = n.Facts
		}
		for ref, le := range events {
			state := stateConverged
			switch {
			case n == nil || s.fleet.stale(n, now):
				state = stateStale
			case critical(le.Event):
				state = stateCritical
			case le.Event.Failed:
				state = stateFailed
			case le.Event.Changed && le.Event.Noop:
				state = stateDrifted
			}
			key := orchestrator.ShapeOf(ref, host, facts)
			if rows[key] == nil {
				rows[key] = map[string][]string{}
			}
			rows[key][state] = append(rows[key][state], host)
		}
	}
	for ref, byState := range rows {
		if v.State != "" && len(byState[v.State]) == 0 {
			continue
		}
		row := driftRow{Resource: ref}
		for _, st := range driftStates {
			hosts := byState[st]
			if hosts == nil {
				hosts = []string{}
			}
			slices.Sort(hosts)
			cell := driftCell{State: st, Count: len(hosts)}
			if len(hosts) > maxCellHosts {
				cell.More = len(hosts) - maxCellHosts
				hosts = hosts[:maxCellHosts]
			}
			cell.Hosts = hosts
			row.Cells = append(row.Cells, cell)
		}
		v.Rows = append(v.Rows, row)
	}
	slices.SortFunc(v.Rows, func(a, b driftRow) int { return cmp.Compare(a.Resource, b.Resource) })
	for _, d := range s.fleet.index.Daily() {
		v.Days = append(v.Days, dayRow{Day: d.Day, OK: d.OK, Changed: d.Changed, Failed: d.Failed, WouldChange: d.WouldChange, NoReply: d.NoReply})
	}
	return v
}

func (s *Server) driftPage(w http.ResponseWriter, r *http.Request) {
	v := driftView{layout: s.layout("Drift and health", "drift"), driftData: s.driftData(r)}
	v.Chart = dailyChart(v.Days)
	s.render(w, "drift", v)
}

// chartSeries are the outcomes the daily chart draws, with their colours.
var chartSeries = []struct {
	Name, Colour string
	Value        func(dayRow) int
}{
	{"changed", "#2f7ed8", func(d dayRow) int { return d.Changed }},
	{"failed", "#d9534f", func(d dayRow) int { return d.Failed }},
	{"would change", "#f0ad4e", func(d dayRow) int { return d.WouldChange }},
	{"no reply", "#777777", func(d dayRow) int { return d.NoReply }},
}

// dailyChart draws the days' counts as grouped bars in an SVG, built from
// numbers and fixed strings only (the day labels are dates we formatted).
func dailyChart(days []dayRow) template.HTML {
	const width, height, left, bottom, top = 720, 220, 40, 30, 10
	if len(days) == 0 {
		return template.HTML(`<p class="muted">No runs yet.</p>`)
	}
	peak := 1
	for _, d := range days {
		for _, s := range chartSeries {
			peak = max(peak, s.Value(d))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" aria-label="host outcomes per day" viewBox="0 0 %d %d" width="%d" height="%d">`, width, height, width, height)
	plotH := float64(height - bottom - top)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, left, height-bottom, width, height-bottom)
	fmt.Fprintf(&b, `<text x="4" y="%d" font-size="10">%d</text><text x="4" y="%d" font-size="10">0</text>`, top+8, peak, height-bottom)
	slot := float64(width-left) / float64(len(days))
	bar := slot / float64(len(chartSeries)+1)
	for i, d := range days {
		x0 := float64(left) + float64(i)*slot
		for j, s := range chartSeries {
			h := plotH * float64(s.Value(d)) / float64(peak)
			fmt.Fprintf(&b, `<rect class="bar" data-day="%s" data-series="%s" data-value="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %d</title></rect>`,
				d.Day, s.Name, s.Value(d), x0+float64(j)*bar+bar/2, float64(height-bottom)-h, bar, h, s.Colour, d.Day, s.Name, s.Value(d))
		}
		if len(days) <= 31 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10">%s</text>`, x0+bar/2, height-bottom+14, d.Day[5:])
		}
	}
	for j, s := range chartSeries {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`,
			left+j*120, height-12, s.Colour, left+j*120+14, height-3, s.Name)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // numbers, fixed names and dates we formatted
}
