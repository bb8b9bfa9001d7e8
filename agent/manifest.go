package agent

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

// manifestTempPattern names the per-request directories bundles are
// unpacked into, below os.TempDir().
const manifestTempPattern = "ccm-manifest-"

// runManifest applies (or, under noop, audits) the manifest bundle a
// request carries and puts its events in reply. A bundle or manifest that
// cannot be decoded, unpacked, parsed or validated is answered bad_request
// naming the problem; resource failures are in the events.
func (a *Agent) runManifest(ctx context.Context, req *protocol.FleetRequest, reply *protocol.FleetReply) {
	fail := func(code protocol.Code, format string, args ...any) {
		if code == protocol.CodeBadRequest {
			a.stats.badRequest.Add(1)
		}
		reply.Error = protocol.NewError(code, format, args...)
	}
	b, err := decodeBundle(req.Manifest)
	if err != nil {
		fail(protocol.CodeBadRequest, "manifest bundle: %s", err)
		return
	}
	// A fresh private directory per request: concurrent requests never
	// share files, and nothing is left behind.
	dir, err := os.MkdirTemp(os.TempDir(), manifestTempPattern)
	if err != nil {
		fail(protocol.CodeInternal, "manifest: %s", err)
		return
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			a.log.Warn("could not remove a manifest directory", "dir", dir, "error", err)
		}
	}()
	m, err := b.Unpack(dir)
	if err != nil {
		fail(protocol.CodeBadRequest, "%s", manifestMessage(err))
		return
	}
	// Remote manifests see facts and data only: no environment, no files.
	rep, err := manifest.Run(ctx, a.eng, m, manifest.RunOptions{
		Noop:         req.Noop,
		Facts:        a.currentFacts().all,
		AllowEnviron: false,
		AllowFiles:   false,
		Log:          a.log.With("request", req.ID),
	})
	if err != nil {
		fail(protocol.CodeBadRequest, "%s", manifestMessage(err))
		return
	}
	a.stats.executed.Add(1)
	reply.Events = append(reply.Events, rep.Events...)
}

// decodeBundle strictly decodes a request's manifest body. Its size is
// bounded by the request's (max_request_bytes); Unpack bounds the files
// again (manifest.MaxBundleBytes) before writing any.
func decodeBundle(raw []byte) (*manifest.Bundle, error) {
	var b manifest.Bundle
	if err := protocol.DecodeJSONStrict(raw, &b); err != nil {
		return nil, errors.New(protocol.AsError(err).Message)
	}
	if len(b.Manifest) == 0 || string(b.Manifest) == "null" {
		return nil, errors.New("field \"manifest\" is required")
	}
	return &b, nil
}

// manifestMessage is err's text, said to be about the manifest.
func manifestMessage(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "manifest") || strings.HasPrefix(msg, manifest.ErrBundle.Error()) {
		return msg
	}
	return "manifest: " + msg
}
