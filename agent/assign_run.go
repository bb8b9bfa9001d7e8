package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// runDue runs every assignment whose time has come, one at a time in name
// order. An assignment declaring a resource (type#name) another selected
// assignment also declares does not run: both are answered with the
// conflict, neither applied in part.
func (s *assigner) runDue(ctx context.Context) {
	now := s.a.now()
	var due []*assigned
	for _, as := range s.known {
		if as.refusal == nil && as.selected && !as.next.IsZero() && !as.next.After(now) && s.rejudge(as) {
			due = append(due, as)
		}
	}
	if len(due) == 0 {
		return
	}
	slices.SortFunc(due, func(x, y *assigned) int { return strings.Compare(x.name, y.name) })
	conflicts := s.conflicts()
	for _, as := range due {
		if ctx.Err() != nil {
			return
		}
		started := s.a.now()
		// A run may ask for a watch repair of its own (a file changed
		// while it ran, a failed repair to try again): kept when due
		// before the schedule.
		as.next = time.Time{}
		if held := s.q.held(as.name, as.digest); held != nil {
			// Not run: only a newer revision runs. The quarantine is
			// recorded again every interval, so status keeps showing it.
			s.skipQuarantined(as, held, started)
			as.next, as.trigger = s.after(as, started), protocol.TriggerSchedule
			continue
		}
		if msg, ok := conflicts[as.name]; ok {
			s.a.log.Error("assignment not run: it declares a resource another assignment declares", "assignment", as.name, "error", msg)
			s.answer(as, started, protocol.NewError(protocol.CodeBadRequest, "%s", msg))
		} else {
			s.execute(ctx, as, started)
		}
		st := s.state[as.name]
		st.Revision, st.LastRun = as.revision, started
		s.state[as.name] = st
		s.save()
		if sched := s.after(as, started); as.next.IsZero() || as.trigger != protocol.TriggerWatch || !as.next.Before(sched) {
			as.next, as.trigger = sched, protocol.TriggerSchedule
		}
	}
}

// conflicts maps each selected, admitted assignment sharing a declared
// resource with another to the message naming them.
func (s *assigner) conflicts() map[string]string {
	owners := map[string][]string{}
	for _, as := range s.known {
		if as.refusal != nil || !as.selected || as.outOfScope != nil {
			continue
		}
		seen := map[string]bool{}
		for _, r := range as.body.resources {
			ref := r.Ref()
			if !seen[ref] {
				seen[ref] = true
				owners[ref] = append(owners[ref], as.name)
			}
		}
	}
	out := map[string]string{}
	refs := slices.Sorted(maps.Keys(owners))
	for _, ref := range refs {
		names := owners[ref]
		if len(names) < 2 {
			continue
		}
		slices.Sort(names)
		for _, n := range names {
			if _, ok := out[n]; !ok {
				out[n] = fmt.Sprintf("resource %s is declared by assignments %s: none of them is applied until one gives it up", ref, strings.Join(names, " and "))
			}
		}
	}
	return out
}

// newRun makes the job of one run of as: its own id, the assignment's
// noop and manifest, the signer as admitted, an audit line, answered into
// history only.
func (s *assigner) newRun(as *assigned, started time.Time) *job {
	a := s.a
	id := runID(as.name, as.revision)
	run := &assignmentRun{name: as.name, revision: as.revision, trigger: as.trigger}
	r := &job{
		received: started,
		deadline: started.Add(protocol.MaxFleetTTL),
		signer:   as.signer,
		body:     as.body,
		record:   true,
		respond:  run,
	}
	if as.spec != nil {
		r.noop = as.spec.Noop
	}
	r.audit = AuditRecord{Time: started.UTC(), RequestID: id, Subject: "$KV." + protocol.AssignmentsBucket + "." + as.name, Identity: a.cfg.Identity}
	r.audit.Signer.Key = as.signerKey
	r.audit.Rule, r.audit.Value = as.audit.Rule, as.audit.Value
	if as.signer != nil {
		r.audit.Signer.Name = as.signer.Name
	}
	if as.body != nil {
		r.audit.Resources = as.body.refs()
	}
	run.request = s.requestOf(as, id, started, r.noop)
	r.logAs(a.log, "assignment", as.name)
	return r
}

// execute runs as once, as a fleet request that passed admission runs.
func (s *assigner) execute(ctx context.Context, as *assigned, started time.Time) {
	a := s.a
	r := s.newRun(as, started)
	run := r.respond.(*assignmentRun)
	run.ran = func(reply *protocol.FleetReply) {
		if as.trigger == protocol.TriggerWatch {
			run.flapping = s.repaired(as, started, reply, r.sensitive)
		}
		if ws := as.watch; ws != nil && ws.failures > 0 {
			run.watchFailures, run.watchError, run.watchFailedAt = ws.failures, ws.lastError, ws.failedAt
		}
	}
	if !s.beginRun(as, started) {
		return
	}
	r.log.Info("running assignment", "revision", as.revision, "trigger", as.trigger)
	reply := a.exec.run(ctx, r)
	s.finishRun(as)
	if reply != nil {
		s.rewatch(as, reply, r.watched, r.wants)
	}
}

// answer records a run of as that did not happen, refused with e.
func (s *assigner) answer(as *assigned, started time.Time, e *protocol.Error) {
	s.a.fin.refuse(s.newRun(as, started), e)
}

// recordRefusal answers a refused revision once: an audit line and a
// history record, so `ccm-orch status` shows the host refusing it.
func (s *assigner) recordRefusal(as *assigned) {
	as.trigger = protocol.TriggerChange
	s.answer(as, s.a.now(), as.refusal)
}

// recordRefusalOnce records as's refusal unless that of its revision was
// recorded already. Only names with a high-water mark keep this in the
// state file (so a restart does not record it again); others keep it in
// memory, so whoever can write the store cannot fill the file.
func (s *assigner) recordRefusalOnce(as *assigned) {
	st, marked := s.state[as.name]
	done := st.Refused
	if !marked {
		done = s.refused[as.name]
	}
	if done == as.revision {
		return
	}
	s.recordRefusal(as)
	if !marked {
		s.refused[as.name] = as.revision
		return
	}
	st.Refused = as.revision
	s.state[as.name] = st
	s.save()
}

// requestOf is the HistoryRequest of a run, as the header of its host
// record carries it, so history shows scheduled runs beside pushed ones
// (an agent may write only its own records, not a request record).
func (s *assigner) requestOf(as *assigned, id string, created time.Time, noop bool) string {
	hr := &protocol.HistoryRequest{
		Protocol:   protocol.HistoryRequestProtocol,
		RequestID:  id,
		Created:    created.UTC(),
		Noop:       noop,
		Discovery:  protocol.DiscoveryAssignment,
		Expected:   []string{s.a.cfg.Identity},
		TTL:        protocol.Duration(protocol.MaxFleetTTL),
		Assignment: as.name,
		Revision:   as.revision,
		Trigger:    as.trigger,
	}
	if as.spec != nil {
		hr.Filter = as.spec.Filter
		hr.Sender, hr.Manifest, hr.Timeout = as.spec.Author, as.spec.ManifestName, as.spec.Interval
	}
	data, err := json.Marshal(hr)
	if err != nil {
		return ""
	}
	return string(data)
}

// save writes the state file (atomically, synced); a failure is logged:
// the schedule goes on, a restart may run an assignment early, and a
// high-water mark not kept is said out loud.
func (s *assigner) save() {
	if err := saveAssignmentState(s.path, s.state); err != nil {
		s.a.log.Error("could not save the assignment state: a restart may run an assignment early, or miss a high-water mark", "file", s.path, "error", err)
	}
}

// runID is a new request id for a run of revision of name.
func runID(name string, revision uint64) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return fmt.Sprintf("%s_r%d_%s", name, revision, b[:])
}
