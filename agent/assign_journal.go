package agent

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// openJournal opens the run journal below stateDir, and logs
// and audits each run the previous agent stopped on: interrupted, or
// quarantined when it was the revision's QuarantineAfter-th stop in a row.
func (x *executor) openJournal(stateDir string) {
	path := filepath.Join(stateDir, QuarantineFileName)
	q, stops, err := openQuarantine(path, x.now())
	x.journal = q
	if err != nil {
		x.log.Error("the run journal is unusable", "file", path, "error", err)
	}
	for _, st := range stops {
		e := st.entry
		if e.Source != "" {
			x.sourceStopped(st)
			continue
		}
		rec := AuditRecord{Time: x.now().UTC(), RequestID: runID(st.name, e.Revision), Subject: "$KV." + protocol.AssignmentsBucket + "." + st.name, Identity: x.identity}
		if st.quarantined {
			rec.Decision, rec.Message = DecisionQuarantined, e.reason(st.name)
			x.log.Error("assignment revision quarantined: the agent stopped while applying it, again", "assignment", st.name, "revision", e.Revision, "stops", len(e.Stops), "bundle", e.Bundle)
		} else {
			rec.Decision = string(protocol.CodeInterrupted)
			rec.Message = fmt.Sprintf("the agent stopped while applying revision %d of assignment %s (run started at %s): it may have run in part; it runs again, and is quarantined if the agent stops during it %d times in a row",
				e.Revision, st.name, e.Started.UTC().Format(time.RFC3339), QuarantineAfter)
			x.log.Warn("an assignment run was interrupted by the agent stopping", "assignment", st.name, "revision", e.Revision, "started", e.Started, "stops", len(e.Stops))
		}
		x.fin.writeAudit(recordLog(x.log, &rec), &rec)
	}
}

// beginRun journals the run of as about to start; when it cannot be
// journaled the run is refused (recorded in history) and false returned.
func (s *assigner) beginRun(as *assigned, started time.Time) bool {
	a := s.a
	bundle := ""
	if as.spec != nil && as.spec.Bundle != nil {
		bundle = as.spec.Bundle.URL + " sha256 " + as.spec.Bundle.SHA256
	}
	cleared, err := s.q.begin(as.name, as.revision, as.digest, bundle, started)
	if err != nil {
		a.log.Error("assignment not run: its start could not be journaled", "assignment", as.name, "revision", as.revision, "error", err)
		s.answer(as, started, protocol.NewError(protocol.CodeInternal, "not run: the start of the run could not be journaled (%s)", err))
		return false
	}
	if cleared != nil {
		a.log.Info("assignment quarantine cleared by a newer revision", "assignment", as.name, "quarantined", cleared.Revision, "revision", as.revision)
	}
	return true
}

// finishRun journals that the run of as ended.
func (s *assigner) finishRun(as *assigned) {
	if err := s.q.finish(as.name, as.digest); err != nil {
		s.a.log.Error("could not journal the end of an assignment run: a restart counts it as a stop", "assignment", as.name, "revision", as.revision, "error", err)
	}
}

// skipQuarantined does not run as, whose revision is quarantined: its
// files are no longer watched, and the quarantine is recorded in history
// (an audit line and a record `ccm-orch status` shows) each time the
// assignment comes due (at start, then every interval: status looks back
// two intervals).
func (s *assigner) skipQuarantined(as *assigned, e *inflight, started time.Time) {
	s.unwatch(as)
	msg := e.reason(as.name)
	if s.q.firstReport(as.name, as.digest) {
		s.a.log.Error("assignment not run: its revision is quarantined", "assignment", as.name, "revision", as.revision, "error", msg)
	}
	s.answer(as, started, protocol.NewError(protocol.CodeQuarantined, "%s", msg))
}

// sourceStopped audits and logs a manifest source's run the previous
// agent stopped on (see openJournal).
func (x *executor) sourceStopped(st stopped) {
	e := st.entry
	rec := AuditRecord{Time: x.now().UTC(), RequestID: sourceRunID(), Subject: e.Source, Identity: x.identity}
	if st.quarantined {
		rec.Decision, rec.Message = DecisionQuarantined, e.reason(st.name)
		x.log.Error("manifest source quarantined: the agent stopped while applying it, again", "manifest", e.Source, "sha256", e.Digest, "stops", len(e.Stops))
	} else {
		rec.Decision = string(protocol.CodeInterrupted)
		rec.Message = fmt.Sprintf("the agent stopped while applying manifest source %s (sha256 %s; run started at %s): it may have run in part; it runs again, and is quarantined if the agent stops during it %d times in a row",
			e.Source, e.Digest, e.Started.UTC().Format(time.RFC3339), QuarantineAfter)
		x.log.Warn("a manifest source's run was interrupted by the agent stopping", "manifest", e.Source, "sha256", e.Digest, "started", e.Started, "stops", len(e.Stops))
	}
	x.fin.writeAudit(recordLog(x.log, &rec), &rec)
}
