package ui

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// Page sizes.
const (
	hostsPerPage = 100
	runsPerPage  = 50
	// hostRuns is how many of a host's results its page shows.
	hostRuns = 50
)

// keyFacts are the facts the fleet table shows.
var keyFacts = []string{"os", "platform", "role"}

var funcs = template.FuncMap{
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		d := time.Since(t).Round(time.Second)
		if d < 0 {
			d = 0
		}
		return d.String() + " ago"
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"dur":  func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"join": strings.Join,
	// prose spells an outcome token in a sentence: would_change is "would change"
	"prose":   func(outcome string) string { return strings.ReplaceAll(outcome, "_", " ") },
	"pathesc": url.PathEscape,
	"add":     func(a, b int) int { return a + b },
	// seconds spells a count of seconds as a duration: 90 is "1m30s"
	"seconds":   func(n int64) string { return (time.Duration(n) * time.Second).String() },
	"difflines": diffLines,
	// unix is a time's Unix nanoseconds, for a column's sort key
	"unix": func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixNano()
	},
	"nanos": func(d time.Duration) int64 { return int64(d) },
}

// diffLine is one line of a unified diff and its kind: "add", "del",
// "hunk", "meta" (the file names) or "ctx"; the line keeps its + or -.
type diffLine struct{ Class, Text string }

// diffLines splits a unified diff into lines by kind, for colour beside
// the markers.
func diffLines(diff string) []diffLine {
	var out []diffLine
	hunks := false // the file names come before the first hunk only
	for line := range strings.Lines(diff) {
		line = strings.TrimSuffix(line, "\n")
		class := "ctx"
		switch {
		case !hunks && (strings.HasPrefix(line, "+++ ") || strings.HasPrefix(line, "--- ")):
			class = "meta"
		case strings.HasPrefix(line, "@@"):
			class, hunks = "hunk", true
		case strings.HasPrefix(line, "+"):
			class = "add"
		case strings.HasPrefix(line, "-"):
			class = "del"
		}
		out = append(out, diffLine{Class: class, Text: line})
	}
	return out
}

// layout is what every page gives the layout template.
type layout struct {
	Title    string
	Nav      string
	Problems []string
	Stamp    uint64
	// Logout shows the logout button: the dashboard asks for a token.
	Logout bool
	// NATS is the state of the dashboard's connection.
	NATS natsView
}

func (s *Server) render(w http.ResponseWriter, page string, data any) {
	s.renderStatus(w, http.StatusOK, page, data)
}

// renderStatus renders a page answering with status code.
func (s *Server) renderStatus(w http.ResponseWriter, code int, page string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if err := s.pages[page].Execute(w, data); err != nil {
		s.opts.Log.Warn("ui: rendering a page failed", "page", page, "error", err)
	}
}

func (s *Server) layout(title, nav string) layout {
	state, since := s.conn.get()
	return layout{Title: title, Nav: nav, Problems: s.fleet.problems(), Stamp: s.stamp(), Logout: s.opts.AuthToken != "",
		NATS: natsView{State: state, Since: since}}
}

// asOf is the time the pages judge hosts online or stale at: now, or,
// while the connection to NATS is lost, the moment it was lost (nothing
// newer can have arrived since); lost says which.
func (s *Server) asOf() (at time.Time, lost bool) {
	if state, since := s.conn.get(); state != natsLive {
		return since, true
	}
	return s.opts.Now(), false
}

// pageNumber reads ?page=, 1-based.
func pageNumber(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// pager links the pages of a paged list.
type pager struct {
	Page  int    `json:"page"`
	Pages int    `json:"pages"`
	Prev  string `json:"prev,omitempty"`
	Next  string `json:"next,omitempty"`
	First int    `json:"first"`
	Count int    `json:"count"`
}

func newPager(r *http.Request, page, total, per int) pager {
	pages := max(1, (total+per-1)/per)
	page = min(page, pages)
	link := func(p int) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		return r.URL.Path + "?" + q.Encode()
	}
	p := pager{Page: page, Pages: pages, Count: total, First: (page - 1) * per}
	if page > 1 {
		p.Prev = link(page - 1)
	}
	if page < pages {
		p.Next = link(page + 1)
	}
	return p
}

// hostRow is one line of the fleet table.
type hostRow struct {
	Identity string `json:"identity"`
	// Facts are the key facts' values, in the order of fleetData.FactNames.
	Facts    []string  `json:"facts"`
	Version  string    `json:"version"`
	LastSeen time.Time `json:"last_seen"`
	Stale    bool      `json:"stale"`
	// Last is the host's last result: its outcome and run.
	Last    string `json:"last_outcome,omitempty"`
	LastRun string `json:"last_request_id,omitempty"`
}

// fleetData is the fleet page: the hosts of the registry that pass its
// filters, in its order, one page of them.
type fleetData struct {
	Filter      string         `json:"where"`
	Select      string         `json:"select,omitempty"`
	FilterError string         `json:"where_error,omitempty"`
	Status      string         `json:"status,omitempty"`
	Last        string         `json:"last,omitempty"`
	Order       string         `json:"order"`
	Total       int            `json:"total"`
	Matched     int            `json:"matched"`
	Online      int            `json:"online"`
	Stale       int            `json:"stale"`
	Outcomes    map[string]int `json:"last_outcomes"`
	// AsOf is set while the connection to NATS is lost: the counts
	// and states are as of then.
	AsOf      time.Time `json:"as_of,omitzero"`
	FactNames []string  `json:"fact_names"`
	Rows      []hostRow `json:"hosts"`
	Pager     pager     `json:"pager"`
}

type fleetView struct {
	layout
	fleetData
	StatusChoices, LastChoices, OrderChoices []string
}

// Fleet page choices: status, last outcome and order.
var (
	fleetStatuses = []string{"online", "stale"}
	fleetLasts    = []string{orchestrator.OutcomeFailed, orchestrator.OutcomeNoReply, orchestrator.OutcomeWouldChange, orchestrator.OutcomeChanged, orchestrator.OutcomeOK, "none"}
	fleetOrders   = []string{"identity", "seen", "outcome"}
)

// outcomeRank orders outcomes worst first; "" (no result) last.
func outcomeRank(o string) int {
	switch o {
	case orchestrator.OutcomeFailed:
		return 0
	case orchestrator.OutcomeNoReply:
		return 1
	case orchestrator.OutcomeWouldChange:
		return 2
	case orchestrator.OutcomeChanged:
		return 3
	case orchestrator.OutcomeOK:
		return 4
	}
	return 5
}

// choice is the query parameter name of r when it is one of allowed,
// else def.
func choice(r *http.Request, name, def string, allowed []string) string {
	if v := r.URL.Query().Get(name); slices.Contains(allowed, v) {
		return v
	}
	return def
}

func (s *Server) fleetData(r *http.Request) fleetData {
	v := fleetData{FactNames: keyFacts, Outcomes: map[string]int{}, Rows: []hostRow{},
		Status: choice(r, "status", "", fleetStatuses), Last: choice(r, "last", "", fleetLasts), Order: choice(r, "order", "identity", fleetOrders)}
	v.Filter = strings.TrimSpace(r.URL.Query().Get("where"))
	v.Select = strings.TrimSpace(r.URL.Query().Get("select"))
	var filter *protocol.Filter
	if v.Filter != "" || v.Select != "" {
		// The terms and the select expression of ccm-orch --where and
		// --select, judged by the same code.
		f, err := protocol.NewFilterSelect(strings.Fields(v.Filter), nil, v.Select)
		switch {
		case errors.Is(err, protocol.ErrSelect):
			v.FilterError = "select expression " + protocol.AsError(err).Message
		case err != nil:
			v.FilterError = protocol.AsError(err).Message
		default:
			filter = f
		}
	}
	now, lost := s.asOf()
	if lost {
		v.AsOf = now
	}
	nodes := s.fleet.nodeList()
	v.Total = len(nodes)
	var matched []hostRow
	for _, n := range nodes {
		facts := withIdentity(n)
		if v.FilterError == "" && filter != nil && !filter.Match(facts) {
			continue
		}
		row := hostRow{Identity: n.Identity, Version: n.Version, LastSeen: n.LastSeen, Stale: s.fleet.stale(n, now)}
		row.Last, row.LastRun = s.lastResult(n.Identity, now)
		switch {
		case v.Status == "online" && row.Stale, v.Status == "stale" && !row.Stale:
			continue
		case v.Last == "none" && row.Last != "", v.Last != "" && v.Last != "none" && row.Last != v.Last:
			continue
		}
		for _, k := range keyFacts {
			row.Facts = append(row.Facts, factText(n.Facts[k]))
		}
		if row.Stale {
			v.Stale++
		} else {
			v.Online++
		}
		if row.Last != "" {
			v.Outcomes[row.Last]++
		}
		matched = append(matched, row)
	}
	switch v.Order {
	case "seen":
		slices.SortStableFunc(matched, func(a, b hostRow) int { return a.LastSeen.Compare(b.LastSeen) })
	case "outcome":
		slices.SortStableFunc(matched, func(a, b hostRow) int { return cmp.Compare(outcomeRank(a.Last), outcomeRank(b.Last)) })
	}
	v.Matched = len(matched)
	v.Pager = newPager(r, pageNumber(r), len(matched), hostsPerPage)
	end := min(v.Pager.First+hostsPerPage, len(matched))
	v.Rows = append(v.Rows, matched[v.Pager.First:end]...)
	return v
}

// lastResult is a host's last outcome and its run: no_reply when the
// newest run that expected it got no reply from it by its deadline (while
// that run may still get one, the result before it); "" when there is
// none.
func (s *Server) lastResult(host string, now time.Time) (outcome, requestID string) {
	if id, req, ok := s.fleet.index.LastUnanswered(host); ok && !collecting(req.Created, time.Duration(req.Timeout), now) {
		return orchestrator.OutcomeNoReply, id
	}
	if id, outcome, ok := s.fleet.index.LastResult(host); ok {
		return outcome, id
	}
	return "", ""
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, "fleet", fleetView{layout: s.layout("Fleet", "fleet"), fleetData: s.fleetData(r),
		StatusChoices: fleetStatuses, LastChoices: fleetLasts, OrderChoices: fleetOrders})
}

// withIdentity is a node's facts with its identity, as filters see them.
func withIdentity(n *protocol.NodeRecord) map[string]any {
	facts := make(map[string]any, len(n.Facts)+1)
	maps.Copy(facts, n.Facts)
	facts["identity"] = n.Identity
	return facts
}

func factText(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// runRow is a pushed run in the listing; Waiting is set while its hosts
// may still reply (before its deadline): the hosts not heard from are
// waited for, not yet "no reply".
type runRow struct {
	orchestrator.HistorySummary
	Waiting bool `json:"waiting"`
	// Host is the host an assignment's run ran on (an agent runs its
	// assignments on its own); "" for a request sent to the fleet.
	Host string `json:"host,omitempty"`
}

// collecting says whether a run created at created with reply deadline
// timeout may still get replies at now (a little slack for the hosts' own
// clocks and the record's way to the stream).
func collecting(created time.Time, timeout time.Duration, now time.Time) bool {
	return now.Before(replyDeadline(created, timeout))
}

// replyDeadline is when a run created at created with reply deadline
// timeout stops waiting for its hosts, as the pages judge it.
func replyDeadline(created time.Time, timeout time.Duration) time.Time {
	return created.Add(timeout + 2*time.Second)
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, "runs", runsView{layout: s.layout("Runs", "runs"), runsData: s.runsData(r),
		SinceChoices: runSinces, OutcomeChoices: runOutcomes, KindChoices: runKinds, OrderChoices: runOrders})
}

// groupView is one group of a run with its hosts' own results.
type groupView struct {
	orchestrator.Group
	ID    string
	Hosts []orchestrator.HostResult
}

type runView struct {
	layout
	// Waiting is set while the hosts not heard from may still reply.
	Waiting bool
	Run     *orchestrator.HistoryRun
	Asked   string
	Filter  string
	Groups  []groupView
	NoReply []string
	// NoReplySites groups NoReply by site when hosts have sites.
	NoReplySites []siteGroup
}

// errNoRun is the answer for a run the index does not hold.
func errNoRun(id string) *pageError {
	return &pageError{http.StatusNotFound, fmt.Sprintf("no run %q in the history this dashboard holds", id)}
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	run := s.fleet.index.Run(id)
	if run == nil {
		s.writePageError(w, errNoRun(id))
		return
	}
	v := runView{layout: s.layout("Run "+id, "runs"), Run: run, Asked: orchestrator.DescribeRequest(run.Request),
		Filter: orchestrator.FilterString(run.Request.Filter), NoReply: run.Result.NoReply,
		Waiting: len(run.Result.NoReply) > 0 && collecting(run.Request.Created, time.Duration(run.Request.Timeout), s.opts.Now())}
	v.NoReplySites = s.fleet.noReplySites(run.Result.NoReply)
	byHost := map[string]orchestrator.HostResult{}
	for _, h := range run.Result.Hosts {
		byHost[h.Identity] = h
	}
	for i, g := range run.Result.Groups {
		gv := groupView{Group: g, ID: "group-" + strconv.Itoa(i+1)}
		for _, h := range g.Hosts {
			gv.Hosts = append(gv.Hosts, byHost[h])
		}
		v.Groups = append(v.Groups, gv)
	}
	s.render(w, "run", v)
}

type factRow struct{ Key, Value string }

// resourceRow is a resource's last event on a host.
type resourceRow struct {
	Resource  string    `json:"resource"`
	RequestID string    `json:"request_id"`
	Time      time.Time `json:"time"`
	Outcome   string    `json:"outcome"`
	Message   string    `json:"message,omitempty"`
}

// hostRunRow is one of a host's results.
type hostRunRow struct {
	RequestID     string        `json:"request_id"`
	Time          time.Time     `json:"time"`
	Asked         string        `json:"asked"`
	Noop          bool          `json:"noop"`
	Outcome       string        `json:"outcome"`
	Late          bool          `json:"late"`
	Duration      time.Duration `json:"duration"`
	WatchFailures int           `json:"watch_failures,omitempty"`
	WatchError    string        `json:"watch_error,omitempty"`
	WatchFailedAt time.Time     `json:"watch_failed_at,omitzero"`
}

// hostAssignment is a host's state for one assignment that selects it.
type hostAssignment struct {
	Name      string    `json:"name"`
	Revision  uint64    `json:"revision"`
	State     string    `json:"state"`
	Message   string    `json:"message,omitempty"`
	RequestID string    `json:"request_id,omitempty"`
	Time      time.Time `json:"time,omitzero"`
}

// hostData is a host's page: its registry entry and facts, the
// assignments that select it, its last event per resource and its runs,
// newest first.
type hostData struct {
	Identity    string           `json:"identity"`
	Registered  bool             `json:"registered"`
	Stale       bool             `json:"stale"`
	Version     string           `json:"version,omitempty"`
	Started     time.Time        `json:"started,omitzero"`
	LastSeen    time.Time        `json:"last_seen,omitzero"`
	Facts       map[string]any   `json:"facts"`
	Assignments []hostAssignment `json:"assignments"`
	Resources   []resourceRow    `json:"resources"`
	Runs        []hostRunRow     `json:"runs"`
}

type hostView struct {
	layout
	hostData
	Node *protocol.NodeRecord
	// KeyFacts are the standard facts shown first; FactRows every fact,
	// nested ones as dotted keys.
	KeyFacts []factRow
	FactRows []factRow
}

// hostKeyFacts are the facts a host page shows first, when the host has
// them.
var hostKeyFacts = []string{"os", "platform", "platform_version", "role", "kernel", "arch", "cpus", "memory_mb", "virtualization", "hostname"}

func (s *Server) hostData(id string) (hostData, *protocol.NodeRecord, *pageError) {
	if err := protocol.ValidateIdentity(id); err != nil {
		return hostData{}, nil, &pageError{http.StatusBadRequest, "not a host identity"}
	}
	v := hostData{Identity: id, Facts: map[string]any{}, Assignments: []hostAssignment{}, Resources: []resourceRow{}, Runs: []hostRunRow{}}
	now, _ := s.asOf()
	node := s.fleet.node(id)
	if node != nil {
		v.Registered, v.Stale, v.Version, v.Started, v.LastSeen = true, s.fleet.stale(node, now), node.Version, node.Started, node.LastSeen
		if node.Facts != nil {
			v.Facts = node.Facts
		}
	}
	runs := s.fleet.index.Host(id, hostRuns)
	slices.Reverse(runs)
	for _, e := range runs {
		v.Runs = append(v.Runs, hostRunRow{RequestID: e.RequestID, Time: e.Time, Asked: e.Asked, Noop: e.Noop, Outcome: e.Outcome, Late: e.Late,
			Duration: e.Duration, WatchFailures: e.WatchFailures, WatchError: e.WatchError, WatchFailedAt: e.WatchFailedAt})
	}
	for ref, le := range s.fleet.index.HostLastEvents(id) {
		row := resourceRow{Resource: ref, RequestID: le.RequestID, Time: le.Time, Outcome: le.Event.Outcome(), Message: le.Event.NoopMessage}
		if len(le.Event.Errors) > 0 {
			row.Message = strings.Join(le.Event.Errors, "; ")
		}
		v.Resources = append(v.Resources, row)
	}
	slices.SortFunc(v.Resources, func(a, b resourceRow) int { return cmp.Compare(a.Resource, b.Resource) })
	if node == nil && len(v.Runs) == 0 {
		return v, nil, &pageError{http.StatusNotFound, fmt.Sprintf("no host %q in the registry or the history this dashboard holds", id)}
	}
	if flt, err := protocol.NewFilter(nil, []string{id}); err == nil {
		if rep, err := s.status(orchestrator.StatusOptions{Filter: flt}); err == nil {
			for _, as := range rep.Assignments {
				for _, h := range as.Hosts {
					if h.Identity == id {
						v.Assignments = append(v.Assignments, hostAssignment{Name: as.Name, Revision: as.Revision, State: h.State,
							Message: h.Message, RequestID: h.RequestID, Time: h.Time})
					}
				}
			}
		}
	}
	return v, node, nil
}

func (s *Server) hostPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	data, node, perr := s.hostData(id)
	if perr != nil {
		s.writePageError(w, perr)
		return
	}
	v := hostView{layout: s.layout("Host "+id, "fleet"), hostData: data, Node: node}
	if node != nil {
		flatten("", node.Facts, &v.FactRows, 0)
		slices.SortFunc(v.FactRows, func(a, b factRow) int { return cmp.Compare(a.Key, b.Key) })
		for _, k := range hostKeyFacts {
			if val, ok := node.Facts[k]; ok {
				v.KeyFacts = append(v.KeyFacts, factRow{Key: k, Value: factText(val)})
			}
		}
	}
	s.render(w, "host", v)
}

// maxFactRows bounds the facts a host page lists.
const maxFactRows = 2000

// flatten lists nested facts as dotted keys.
func flatten(prefix string, m map[string]any, out *[]factRow, depth int) {
	for k, v := range m {
		if len(*out) >= maxFactRows {
			return
		}
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && depth < 8 {
			flatten(key, sub, out, depth+1)
			continue
		}
		*out = append(*out, factRow{Key: key, Value: factText(v)})
	}
}
