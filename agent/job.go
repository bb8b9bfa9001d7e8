package agent

import (
	"log/slog"
	"time"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// job is one piece of work on its way from admission to its answer: a
// fleet request, a scheduled assignment run or a watch repair. It holds
// what to run (the body, parsed once), who asked (the signer, and the
// audit line naming them) and how to answer (its responder). It owns that
// answer: whatever the outcome (refused, ignored, duplicate, run), it ends
// in finish, exactly once.
type job struct {
	received time.Time
	audit    AuditRecord
	// noop and deadline are how to run it: a dry run, and when it expires
	noop     bool
	deadline time.Time
	// signer is the trusted signer, nil for an unsigned request (insecure
	// mode) or a valid signature by a key the insecure policy does not list
	signer *Signer
	// body is what the job asks for, parsed once: what the policy checks,
	// the audit line names and the engine runs
	body *body
	// cached is whether this job owns its id's replay cache entry (its
	// answer is kept there)
	cached bool
	// record is whether its answer goes to history: the request decoded and
	// its sender is authenticated
	record bool
	// respond answers it
	respond responder
	// source is a manifest source's run (see sourceRun), nil for others
	source *sourceRun
	// watched are the files its run asked to be watched and sensitive the
	// resources (type#name) it ran as sensitive, read from the typed
	// properties the engine ran (see prepared)
	watched   []string
	sensitive map[string]bool
	// wants are what the watched files declare, by path (see wantOf)
	wants map[string]fileWant
	// log is the job's logger and logWith what it adds to the agent's:
	// the job's request id and signer (and, for a scheduled run, its
	// assignment), given once where the job enters the agent (logAs);
	// every line about the job, the engine's and its providers' included,
	// carries them
	log     *slog.Logger
	logWith []any
}

// body is a request's resources, parsed once at admission.
type body struct {
	// ensure is the resource of an ensure request, nil for a manifest
	ensure *engine.Spec
	// bundle and manifest are a manifest request's, parsed without
	// writing any file
	bundle   *manifest.Bundle
	manifest *manifest.Manifest
	// resources are the declared resources as the policy sees them, in
	// order (names as written, before templates)
	resources []policyResource
	// vouch is the trusted signer of an assignment's object store bundle:
	// the policy judges the run by it too (nil for other bodies)
	vouch *Signer
}

// prepared notes what of a resource the run prepared concerns the job
// after the run: a file it asks to be watched, whether it is sensitive.
func (j *job) prepared(p *engine.Prepared) {
	if path, ok := watchedPath(p); ok {
		j.watched = append(j.watched, path)
		if want, ok := wantOf(p.Properties.(*filetype.Properties)); ok {
			if j.wants == nil {
				j.wants = map[string]fileWant{}
			}
			j.wants[path] = want
		}
	}
	if p.Properties.Common().Sensitive {
		if j.sensitive == nil {
			j.sensitive = map[string]bool{}
		}
		j.sensitive[p.Ref()] = true
	}
}

// id is the job's request id: the decoded one, or, for a request that did
// not decode, the one it claims (untrusted, to match the reply and audit
// line); see claimID.
func (j *job) id() string { return j.audit.RequestID }

// logAs names j on every line logged about it from here on: base with
// j's request id, its signer's key and more (key/value pairs), those with
// an empty value left out. It is called once, where j enters the agent.
func (j *job) logAs(base *slog.Logger, more ...any) {
	j.logWith = nonEmpty(append([]any{"request", j.id(), "signer", j.audit.Signer.Key}, more...))
	j.log = base.With(j.logWith...)
}

// nonEmpty is the key/value pairs kv without those whose value is an
// empty string: a log line has no "key":"" field.
func nonEmpty(kv []any) []any {
	out := make([]any, 0, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		if v, ok := kv[i+1].(string); ok && v == "" {
			continue
		}
		out = append(out, kv[i], kv[i+1])
	}
	return out
}
