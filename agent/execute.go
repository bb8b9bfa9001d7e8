package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// executor runs admitted jobs with the engine, the signer's policy asked
// again about each resource as it will run (the authorizer's guard).
type executor struct {
	identity  string
	eng       *engine.Engine
	judge     authorizer
	audit     auditor
	fin       *finisher
	facts     func() *factSet
	skew      time.Duration
	diffLimit int64
	log       *slog.Logger
	now       func() time.Time
	// journal is the run journal of assignments and manifest sources
	// (see assign_quarantine.go), opened by Run
	journal *quarantine
}

// run does an admitted job, whatever brought it (a fleet request, an
// assignment's schedule, a watch repair), in one order: its audit line
// (accepted; refused internal when it cannot be written, as nothing runs
// unaudited), the run, its answer (finish). It returns the reply, nil when
// the job did not run.
func (x *executor) run(ctx context.Context, r *job) *protocol.FleetReply {
	r.audit.Decision = DecisionAccepted
	if err := x.audit.write(&r.audit); err != nil {
		r.log.Error("not running a request: the audit log cannot be written", "error", err)
		x.fin.refuse(r, protocol.NewError(protocol.CodeInternal, "audit log unavailable"))
		return nil
	}
	reply := x.execute(ctx, r)
	if e := reply.Error; e != nil {
		// Resource failures are the engine's lines; this is a run that
		// could not start (refused as it would run, invalid, expired).
		r.log.Log(context.Background(), refusalLevel(e), "the request could not run", "code", e.Code, "error", e.Message)
	}
	if s, ok := r.respond.(settler); ok {
		s.settle(reply)
	}
	x.fin.finish(r, reply)
	return reply
}

// execute runs one admitted job, the body parsed at admission, and
// returns its reply.
func (x *executor) execute(ctx context.Context, r *job) *protocol.FleetReply {
	started := x.now()
	reply := protocol.NewFleetReply(r.id(), x.identity, started)
	defer func() { reply.Duration = x.now().Sub(started) }()
	if started.After(r.deadline.Add(x.skew)) {
		reply.Error = protocol.NewError(protocol.CodeExpired, "request expired at %s before it could start (max_clock_skew %s)", r.deadline.Format(time.RFC3339), x.skew)
		return reply
	}
	switch {
	case r.source != nil:
		x.runSource(ctx, r, reply)
		return reply
	case r.body.ensure == nil:
		x.runManifest(ctx, r, reply)
		return reply
	}
	// Remote requests see facts only: no environment, no files.
	opts := engine.RunOptions{Noop: r.noop, Env: x.facts().env, Guard: x.judge.guard(r), Prepared: notes(r), DiffLimit: x.diffLimit, LogWith: r.logWith}
	ev, err := x.eng.Ensure(ctx, opts, *r.body.ensure)
	if err != nil {
		reply.Error = runError(err)
		return reply
	}
	reply.Events = append(reply.Events, ev)
	return reply
}

// notes is the engine's Prepared hook for r: only a job that learns its
// reply (an assignment's run, settler) reads what the run prepared (its
// files to watch, its sensitive resources); a fleet request notes nothing.
func notes(r *job) func(*engine.Prepared) {
	if _, ok := r.respond.(settler); ok {
		return r.prepared
	}
	return nil
}

// runError is the answer to an ensure request whose run could not start,
// in the error's words and classified by it; a property that failed
// validation is its field, ensure.properties.<property>.
func runError(err error) *protocol.Error {
	code := runErrorCode(err)
	var ie *resources.InvalidError
	if code == protocol.CodeBadRequest && errors.As(err, &ie) && ie.Field != "" {
		return protocol.WrapAt(code, ensurePropertiesField+"."+ie.Field, err)
	}
	return protocol.Wrap(code, err)
}

// ensurePropertiesField is where an ensure request's properties are, as
// a protocol.Error names a field.
const ensurePropertiesField = "ensure.properties"

// runErrorCode classifies the error of a run that could not start: the
// policy refused a resource as it would run (forbidden), or the request is
// invalid (bad_request).
func runErrorCode(err error) protocol.Code {
	if errors.Is(err, resources.ErrForbidden) {
		return protocol.CodeForbidden
	}
	return protocol.CodeBadRequest
}

// runManifest applies (or, under noop, audits) the manifest a request
// carries, parsed at admission, and puts its events in reply. Its bundled
// files are written to a private directory first. A manifest that cannot be
// run (data, templates, validation) is answered bad_request naming the
// problem, one the policy refuses as it would run forbidden; resource
// failures are in the events.
func (x *executor) runManifest(ctx context.Context, r *job, reply *protocol.FleetReply) {
	// A fresh private directory per request: concurrent requests never
	// share files, and nothing is left behind.
	dir, err := os.MkdirTemp(os.TempDir(), manifestTempPattern)
	if err != nil {
		reply.Error = protocol.NewError(protocol.CodeInternal, "manifest: %s", err)
		return
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			r.log.Warn("could not remove a manifest directory", "dir", dir, "error", err)
		}
	}()
	if err := r.body.bundle.WriteFiles(dir); err != nil {
		reply.Error = protocol.Wrapf(protocol.CodeBadRequest, err, "%s", manifestMessage(err))
		return
	}
	// Remote manifests see facts and data only: no environment, no files.
	rep, err := manifest.Run(ctx, x.eng, r.body.manifest.InDir(dir), manifest.RunOptions{
		Noop:         r.noop,
		Facts:        x.facts().all,
		AllowEnviron: false,
		AllowFiles:   false,
		Guard:        x.judge.guard(r),
		Prepared:     notes(r),
		Log:          x.log,
		LogWith:      r.logWith,
		DiffLimit:    x.diffLimit,
	})
	if err != nil {
		reply.Error = protocol.Wrapf(runErrorCode(err), err, "%s", manifestMessage(err))
		return
	}
	reply.Events = append(reply.Events, rep.Events...)
}
