package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/ccm-fleet/ccm/jsstore"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// DecisionRemoved is the audit decision of a signed removal of an
// assignment this agent accepted: it stops running it.
const DecisionRemoved = "removed"

// digestOf is the SHA-256 of a stored value, hex encoded.
func digestOf(value []byte) string {
	sum := sha256.Sum256(value)
	return hex.EncodeToString(sum[:])
}

// mayReplace decides whether a document signed at created by signerKey
// (signer: its policy entry, nil in insecure mode for an unlisted key) may
// replace what this agent runs of name: it must be signed after the
// name's high-water mark (the same stored value, digest, is the accepted
// revision itself), by the name's owner or an assignments administrator,
// and the state file must have room for a new name. what is "revision" or
// "removal", for messages. The refusal is forbidden, with its rule and
// value in audit.
func (s *assigner) mayReplace(name, what string, revision uint64, digest string, created time.Time, signerKey string, signer *Signer, audit *AuditRecord) *protocol.Error {
	st, known := s.state[name]
	if known && st.Digest == digest && !st.Removed {
		return nil
	}
	if !known {
		// The first this agent sees of the name: its owner is what the
		// store's own history of it says, not whichever revision this
		// agent happened to see first.
		st.Owner = s.historyOwner(name, revision)
		if st.Owner != "" && len(s.owners) < MaxAssignmentStates {
			if s.owners == nil {
				s.owners = map[string]string{}
			}
			s.owners[name] = st.Owner
		}
	}
	if known && !st.Created.IsZero() && !created.After(st.Created) {
		audit.Rule, audit.Value = "high-water mark", created.Format(time.RFC3339Nano)
		return protocol.NewError(protocol.CodeForbidden, "assignment %s %s %d was signed at %s, not after revision %d already run here (signed at %s): an older revision stored again is not run (assign it anew to roll back)",
			name, what, revision, created.Format(time.RFC3339Nano), st.Accepted, st.Created.Format(time.RFC3339Nano))
	}
	if st.Owner != "" && !st.Removed && st.Owner != signerKey && (signer == nil || !signer.AssignmentsAdmin) {
		audit.Rule, audit.Value = "assignment owner", signerKey
		return protocol.NewError(protocol.CodeForbidden, "assignment %s %s %d by signer %s refused: the assignment belongs to signer %s, and only it or a signer with assignments_admin: true may replace or remove it",
			name, what, revision, s.signerName(signerKey), s.signerName(st.Owner))
	}
	if !known && len(s.state) >= MaxAssignmentStates {
		audit.Rule, audit.Value = "assignment state", name
		return protocol.NewError(protocol.CodeForbidden, "assignment %s: this agent already keeps the high-water marks of %d assignments, the limit", name, MaxAssignmentStates)
	}
	return nil
}

// signerName is a signer's policy name and key, or its key alone.
func (s *assigner) signerName(key string) string {
	if sg, ok := s.a.setup.policy.SignerByKey(key); ok {
		return sg.Name + " (" + key + ")"
	}
	return key
}

// remove takes a signed removal of name (stored at revision, with digest):
// from a trusted signer, naming name, signed after the high-water mark,
// by the owner or an assignments administrator, it stops the assignment
// and becomes the mark (the name is free again); otherwise it is audited
// as refused and what runs stays.
func (s *assigner) remove(name string, revision uint64, digest string, signed *protocol.SignedAssignment) {
	a := s.a
	now := a.now()
	audit := AuditRecord{Time: now.UTC(), RequestID: runID(name, revision), Subject: "$KV." + protocol.AssignmentsBucket + "." + name, Identity: a.cfg.Identity, Signer: AuditSigner{Key: signed.Signer}}
	refused := func(e *protocol.Error) {
		audit.Decision, audit.Message = string(e.Code), e.Message
		a.fin.writeAudit(recordLog(a.log, &audit), &audit)
		a.log.Warn("assignment removal refused, the assignment stays", "assignment", name, "revision", revision, "code", e.Code, "error", e.Message)
		if s.known[name] == nil {
			s.restore(name)
		}
	}
	if st := s.state[name]; st.Removed && st.Digest == digest {
		return // the removal already taken (a restart)
	}
	if signed.Signer == "" {
		refused(protocol.NewError(protocol.CodeUnauthenticated, "removal of assignment %s is not signed: an assignment is removed only by a signed removal from a key the policy trusts", name))
		return
	}
	signer, _, e := a.gate.auth.authenticate(signed.Removal, signed.Signer, signed.Signature)
	if signer != nil {
		audit.Signer.Name = signer.Name
	}
	if e != nil {
		refused(e)
		return
	}
	r, err := protocol.DecodeAssignmentRemoval(signed.Removal, protocol.Limits{MaxBytes: len(signed.Removal)})
	switch {
	case err != nil:
		refused(protocol.AsError(err))
		return
	case r.Name != name:
		refused(protocol.NewError(protocol.CodeBadRequest, "removal stored as %q names assignment %q", name, r.Name))
		return
	case r.Sender != signed.Signer:
		refused(protocol.NewError(protocol.CodeUnauthenticated, "field \"sender\" %.60q is not the signer %s", r.Sender, signed.Signer))
		return
	}
	if e := s.mayReplace(name, "removal", revision, digest, r.Created, signed.Signer, signer, &audit); e != nil {
		refused(e)
		return
	}
	if cur := s.known[name]; cur != nil {
		s.unwatch(cur)
	}
	delete(s.known, name)
	if err := s.q.forget(name); err != nil {
		a.log.Error("could not update the run journal", "assignment", name, "error", err)
	}
	st := s.state[name]
	st.Created, st.Accepted, st.Digest, st.Owner, st.Removed = r.Created, revision, digest, "", true
	st.LastRun, st.Revision = time.Time{}, 0
	s.state[name] = st
	s.save()
	audit.Decision, audit.Message = DecisionRemoved, "assignment "+name+" removed by a signed removal"
	a.fin.writeAudit(recordLog(a.log, &audit), &audit)
	a.log.Info("assignment removed", "assignment", name, "revision", revision, "signer", signed.Signer)
	a.setup.metrics.assignmentRemoved(name)
}

// ignoreDelete takes a delete or purge of name's key in the store: not a
// removal (whoever can write the store can delete a key, signing nothing),
// so it is audited as refused and what runs stays; after a restart the
// revision this agent accepted is fetched from the store's history.
func (s *assigner) ignoreDelete(name string, revision uint64, op jetstream.KeyValueOp) {
	a := s.a
	cur := s.known[name]
	st, kept := s.state[name]
	if cur == nil && !kept {
		return // never seen here: nothing runs, nothing to keep
	}
	if kept && st.Removed && cur == nil {
		return // removed by a signed removal already
	}
	verb := "delete"
	if op == jetstream.KeyValuePurge {
		verb = "purge"
	}
	e := protocol.NewError(protocol.CodeForbidden, "unsigned %s of assignment %s (store revision %d) ignored: an assignment is removed only by a signed removal (ccm-orch assignments rm %s --key FILE); the revision accepted before stays in force", verb, name, revision, name)
	audit := AuditRecord{Time: a.now().UTC(), RequestID: runID(name, revision), Subject: "$KV." + protocol.AssignmentsBucket + "." + name, Identity: a.cfg.Identity,
		Decision: string(e.Code), Message: e.Message, Rule: "signed removal required", Value: verb}
	a.fin.writeAudit(recordLog(a.log, &audit), &audit)
	a.log.Warn("unsigned removal of an assignment ignored", "assignment", name, "revision", revision, "operation", verb)
	if cur == nil || !cur.supersedes {
		s.restore(name)
	}
}

// restore runs again the revision of name this agent last accepted,
// fetched from the store's history by its revision and checked against
// its digest, when what the store holds now is not one to run (a restart
// after a delete, an older revision stored again). It reports whether
// one was restored.
func (s *assigner) restore(name string) bool {
	a := s.a
	st, ok := s.state[name]
	if !ok || st.Removed || st.Digest == "" || st.Accepted == 0 || !s.following {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.HistoryTimeout)
	defer cancel()
	kv, err := s.store(ctx)
	var e jetstream.KeyValueEntry
	if err == nil {
		e, err = kv.GetRevision(ctx, name, st.Accepted)
	}
	switch {
	case err != nil:
		a.log.Error("the assignment revision this agent last accepted is not in the store any more: it does not run until a newer signed revision", "assignment", name, "revision", st.Accepted, "error", err)
		return false
	case e.Operation() != jetstream.KeyValuePut || digestOf(e.Value()) != st.Digest:
		a.log.Error("the store's revision of the assignment this agent last accepted is not the one it accepted: it does not run until a newer signed revision", "assignment", name, "revision", st.Accepted)
		return false
	}
	a.log.Info("assignment kept: running the revision accepted before", "assignment", name, "revision", st.Accepted)
	s.take(name, e.Revision(), e.Value(), true)
	cur := s.known[name]
	return cur != nil && cur.supersedes
}

// rejudge judges the signer's hosts scope (and noop_only) of an admitted,
// selected assignment on the host's current facts, and reports whether it
// may run. When the host leaves the scope the assignment stops here (its
// refusal audited and recorded, so status shows why); when it comes back,
// it runs at once.
func (s *assigner) rejudge(as *assigned) bool {
	a := s.a
	if as.refusal != nil || !as.selected || as.signer == nil || as.spec == nil {
		return true
	}
	var audit AuditRecord
	e := a.gate.judge.host(as.signer, as.spec.Noop, a.facts.current().all, &audit)
	if e == nil && as.body != nil && as.body.vouch != nil {
		// The signer of an object store bundle must allow this host too.
		e = a.gate.judge.host(as.body.vouch, as.spec.Noop, a.facts.current().all, &audit)
	}
	switch {
	case e != nil && as.outOfScope == nil:
		as.outOfScope = e
		as.next = time.Time{}
		s.unwatch(as)
		a.log.Warn("assignment out of its signer's hosts scope on this host: not running it", "assignment", as.name, "revision", as.revision, "error", e.Message)
		if as.trigger == "" {
			as.trigger = protocol.TriggerChange
		}
		r := s.newRun(as, a.now())
		r.audit.Rule, r.audit.Value = audit.Rule, audit.Value
		a.fin.refuse(r, e)
		return false
	case e != nil:
		return false
	case as.outOfScope != nil:
		as.outOfScope = nil
		a.log.Info("assignment back in its signer's hosts scope on this host: running it", "assignment", as.name, "revision", as.revision)
		as.next, as.trigger = a.now(), protocol.TriggerFacts
	}
	return true
}

// historyOwner is the owner of name as the store's history of its key
// says, read from the oldest revision kept up to (not including)
// revision: the signer of the first trusted revision after the last
// removal the owner or an administrator signed. A later revision by a
// signer that is neither the owner nor an assignments administrator does
// not change it (an agent watching then refused it); unsigned deletes and
// purges are not removals. "" when the history holds no earlier trusted
// revision (revision is the name's first), or cannot be read (then the
// first revision seen owns the name, as before). Each kept revision costs
// one direct read of the stream, no consumer; the first is usually the
// only one.
func (s *assigner) historyOwner(name string, revision uint64) string {
	a := s.a
	if !s.following || revision <= 1 {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.HistoryTimeout)
	defer cancel()
	stream, err := a.setup.js.Stream(ctx, "KV_"+protocol.AssignmentsBucket)
	if err != nil {
		a.log.Warn("cannot read the history of an assignment to find its owner: the first revision seen owns it", "assignment", name, "error", err)
		return ""
	}
	subject := "$KV." + protocol.AssignmentsBucket + "." + name
	limits := protocol.Limits{MaxBytes: jsstore.MaxAssignmentValueSize + 1}
	owner := ""
	for seq, n := uint64(1), 0; seq < revision && n < jsstore.AssignmentHistory; n++ {
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if err != nil || m.Sequence >= revision {
			if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				a.log.Warn("cannot read the history of an assignment to find its owner: the first revision seen owns it", "assignment", name, "error", err)
				return ""
			}
			break
		}
		seq = m.Sequence + 1
		if op := m.Header.Get(kvOperationHeader); op != "" {
			continue // a delete or purge: not a removal
		}
		owner = s.replayOwner(name, owner, m.Data, limits)
	}
	return owner
}

// kvOperationHeader marks a KV delete or purge in the stream.
const kvOperationHeader = "KV-Operation"

// replayOwner is the owner of name after the stored value, given the
// owner before it: the same ownership rules the live agent applies, with
// the policy's trust, and nothing run.
func (s *assigner) replayOwner(name, owner string, value []byte, limits protocol.Limits) string {
	signed, err := protocol.DecodeSignedAssignment(value, limits)
	if err != nil || signed.Signer == "" {
		return owner
	}
	payload := signed.Assignment
	if len(signed.Removal) > 0 {
		payload = signed.Removal
	}
	signer, _, e := s.a.gate.auth.authenticate(payload, signed.Signer, signed.Signature)
	if e != nil {
		return owner
	}
	mayChange := owner == "" || owner == signed.Signer || (signer != nil && signer.AssignmentsAdmin)
	if len(signed.Removal) > 0 {
		r, err := protocol.DecodeAssignmentRemoval(signed.Removal, limits)
		if err == nil && r.Name == name && r.Sender == signed.Signer && mayChange {
			return ""
		}
		return owner
	}
	spec, err := protocol.DecodeAssignment(signed.Assignment, limits)
	if err != nil || spec.Name != name || spec.Sender != signed.Signer || owner != "" {
		return owner
	}
	return signed.Signer
}
