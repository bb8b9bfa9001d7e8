package orchestrator

import "github.com/ccm-fleet/ccm/protocol"

// IndexedRun is a run a HistoryIndex holds: its summary, as Runs lists
// it, and the request it was rebuilt from (which names the assignment of
// a run an agent started on its own).
type IndexedRun struct {
	Summary HistorySummary
	Request *protocol.HistoryRequest
}

// AllRuns returns every run whose request record was read, newest first;
// each run's summary is made once per change of its records.
func (x *HistoryIndex) AllRuns() []IndexedRun {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]IndexedRun, 0, len(x.order))
	for i := len(x.order) - 1; i >= 0; i-- {
		run := x.runs[x.order[i]]
		if run.request == nil {
			continue
		}
		run.rebuilt()
		out = append(out, IndexedRun{Summary: run.sum, Request: run.request})
	}
	return out
}

// LastEventsWhere is LastEvents over the runs whose request keep accepts
// (a run whose request record was not read yet is kept).
func (x *HistoryIndex) LastEventsWhere(keep func(*protocol.HistoryRequest) bool) map[string]map[string]LastEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := map[string]map[string]LastEvent{}
	for _, id := range x.order {
		run := x.runs[id]
		if run.request != nil && !keep(run.request) {
			continue
		}
		for host, rec := range run.recs {
			m := out[host]
			if m == nil {
				m = map[string]LastEvent{}
				out[host] = m
			}
			addLastEvents(m, id, rec)
		}
	}
	return out
}
