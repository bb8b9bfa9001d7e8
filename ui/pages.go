package ui

import (
	"cmp"
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
}

// layout is what every page gives the layout template.
type layout struct {
	Title    string
	Nav      string
	Problems []string
	Stamp    uint64
	// Logout shows the logout button: the dashboard asks for a token.
	Logout bool
}

func (s *Server) render(w http.ResponseWriter, page string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.pages[page].Execute(w, data); err != nil {
		s.opts.Log.Warn("ui: rendering a page failed", "page", page, "error", err)
	}
}

func (s *Server) layout(title, nav string) layout {
	return layout{Title: title, Nav: nav, Problems: s.fleet.problems(), Stamp: s.fleet.stamp(), Logout: s.opts.AuthToken != ""}
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
	Page, Pages  int
	Prev, Next   string
	First, Count int
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
	Identity string
	Facts    []string
	Version  string
	LastSeen time.Time
	Stale    bool
	// Last is the host's last result: its outcome and run.
	Last, LastRun string
}

type fleetView struct {
	layout
	Filter, FilterError string
	Total, Matched      int
	Online, Stale       int
	Outcomes            map[string]int
	FactNames           []string
	Rows                []hostRow
	Pager               pager
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	v := fleetView{layout: s.layout("Fleet", "fleet"), FactNames: keyFacts, Outcomes: map[string]int{}}
	v.Filter = strings.TrimSpace(r.URL.Query().Get("where"))
	var filter *protocol.Filter
	if v.Filter != "" {
		f, err := protocol.NewFilter(strings.Fields(v.Filter), nil)
		if err != nil {
			v.FilterError = protocol.AsError(err).Message
		} else {
			filter = f
		}
	}
	now := s.opts.Now()
	nodes := s.fleet.nodeList()
	v.Total = len(nodes)
	var matched []*protocol.NodeRecord
	for _, n := range nodes {
		facts := withIdentity(n)
		if v.FilterError == "" && filter != nil && !filter.Match(facts) {
			continue
		}
		matched = append(matched, n)
		if s.fleet.stale(n, now) {
			v.Stale++
		} else {
			v.Online++
		}
		if _, outcome, ok := s.fleet.index.LastResult(n.Identity); ok {
			v.Outcomes[outcome]++
		}
	}
	v.Matched = len(matched)
	v.Pager = newPager(r, pageNumber(r), len(matched), hostsPerPage)
	end := min(v.Pager.First+hostsPerPage, len(matched))
	for _, n := range matched[v.Pager.First:end] {
		row := hostRow{Identity: n.Identity, Version: n.Version, LastSeen: n.LastSeen, Stale: s.fleet.stale(n, now)}
		for _, k := range keyFacts {
			row.Facts = append(row.Facts, factText(n.Facts[k]))
		}
		if id, outcome, ok := s.fleet.index.LastResult(n.Identity); ok {
			row.Last, row.LastRun = outcome, id
		}
		v.Rows = append(v.Rows, row)
	}
	s.render(w, "fleet", v)
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

// runRow is a run in the listing; Waiting is set while its hosts may
// still reply (before its deadline): the hosts not heard from are waited
// for, not yet "no reply".
type runRow struct {
	orchestrator.HistorySummary
	Waiting bool
}

type runsView struct {
	layout
	Runs  []runRow
	Pager pager
}

// collecting says whether a run created at created with reply deadline
// timeout may still get replies at now (a little slack for the hosts' own
// clocks and the record's way to the stream).
func collecting(created time.Time, timeout time.Duration, now time.Time) bool {
	return now.Before(created.Add(timeout + 2*time.Second))
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	v := runsView{layout: s.layout("Runs", "runs")}
	v.Pager = newPager(r, pageNumber(r), s.fleet.index.Len(), runsPerPage)
	now := s.opts.Now()
	for _, sum := range s.fleet.index.Runs(v.Pager.First, runsPerPage) {
		row := runRow{HistorySummary: sum}
		if sum.Hosts.NoReply > 0 {
			if run := s.fleet.index.Run(sum.RequestID); run != nil {
				row.Waiting = collecting(run.Request.Created, time.Duration(run.Request.Timeout), now)
			}
		}
		v.Runs = append(v.Runs, row)
	}
	s.render(w, "runs", v)
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
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	run := s.fleet.index.Run(id)
	if run == nil {
		http.Error(w, fmt.Sprintf("no run %q in the history this dashboard holds", id), http.StatusNotFound)
		return
	}
	v := runView{layout: s.layout("Run "+id, "runs"), Run: run, Asked: orchestrator.DescribeRequest(run.Request),
		Filter: orchestrator.FilterString(run.Request.Filter), NoReply: run.Result.NoReply,
		Waiting: len(run.Result.NoReply) > 0 && collecting(run.Request.Created, time.Duration(run.Request.Timeout), s.opts.Now())}
	byHost := map[string]orchestrator.HostResult{}
	for _, h := range run.Result.Hosts {
		byHost[h.Identity] = h
	}
	for i, g := range run.Result.Groups {
		gv := groupView{Group: g, ID: "g" + strconv.Itoa(i)}
		for _, h := range g.Hosts {
			gv.Hosts = append(gv.Hosts, byHost[h])
		}
		v.Groups = append(v.Groups, gv)
	}
	s.render(w, "run", v)
}

type factRow struct{ Key, Value string }

type resourceRow struct {
	Resource string
	orchestrator.LastEvent
}

type hostView struct {
	layout
	Identity  string
	Node      *protocol.NodeRecord
	Stale     bool
	Facts     []factRow
	Runs      []orchestrator.HostEntry
	Resources []resourceRow
}

func (s *Server) hostPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := protocol.ValidateIdentity(id); err != nil {
		http.Error(w, "not a host identity", http.StatusBadRequest)
		return
	}
	v := hostView{layout: s.layout("Host "+id, "fleet"), Identity: id, Node: s.fleet.node(id)}
	if v.Node != nil {
		v.Stale = s.fleet.stale(v.Node, s.opts.Now())
		flatten("", v.Node.Facts, &v.Facts, 0)
		slices.SortFunc(v.Facts, func(a, b factRow) int { return cmp.Compare(a.Key, b.Key) })
	}
	v.Runs = s.fleet.index.Host(id, hostRuns)
	slices.Reverse(v.Runs)
	for ref, le := range s.fleet.index.HostLastEvents(id) {
		v.Resources = append(v.Resources, resourceRow{Resource: ref, LastEvent: le})
	}
	slices.SortFunc(v.Resources, func(a, b resourceRow) int { return cmp.Compare(a.Resource, b.Resource) })
	if v.Node == nil && len(v.Runs) == 0 {
		http.Error(w, fmt.Sprintf("no host %q in the registry or the history this dashboard holds", id), http.StatusNotFound)
		return
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
