package agent

import (
	"context"
	"os"

	"github.com/ccm-fleet/ccm/agent/policy"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

// manifestTempPattern names the per-request directories bundles are
// unpacked into, below os.TempDir().
const manifestTempPattern = policy.ManifestTempPattern

// runManifest applies (or, under noop, audits) the manifest a request
// carries, parsed at admission, and puts its events in reply. Its bundled
// files are written to a private directory first. A manifest that cannot be
// run (data, templates, validation) is answered bad_request naming the
// problem, one the policy refuses as it would run forbidden; resource
// failures are in the events.
func (a *Agent) runManifest(ctx context.Context, r *job, reply *protocol.FleetReply) {
	// A fresh private directory per request: concurrent requests never
	// share files, and nothing is left behind.
	dir, err := os.MkdirTemp(os.TempDir(), manifestTempPattern)
	if err != nil {
		reply.Error = protocol.NewError(protocol.CodeInternal, "manifest: %s", err)
		return
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			a.log.Warn("could not remove a manifest directory", "dir", dir, "error", err)
		}
	}()
	if err := r.body.bundle.WriteFiles(dir); err != nil {
		reply.Error = protocol.NewError(protocol.CodeBadRequest, "%s", manifestMessage(err))
		return
	}
	// Remote manifests see facts and data only: no environment, no files.
	rep, err := manifest.Run(ctx, a.eng, r.body.manifest.InDir(dir), manifest.RunOptions{
		Noop:         r.noop,
		Facts:        a.currentFacts().all,
		AllowEnviron: false,
		AllowFiles:   false,
		Guard:        a.guard(r),
		Log:          a.log.With("request", r.id()),
		DiffLimit:    a.cfg.DiffMaxBytes,
	})
	if err != nil {
		reply.Error = protocol.NewError(runErrorCode(err), "%s", manifestMessage(err))
		return
	}
	reply.Events = append(reply.Events, rep.Events...)
}

// manifestMessage is err's text, said to be about the manifest.
func manifestMessage(err error) string { return policy.ManifestMessage(err) }
