package main

import (
	"fmt"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// manifestFlags are the argument and flags of apply and audit.
type manifestFlags struct {
	runFlags
	path string
}

func (a *app) registerApply(cli *fisk.Application) {
	c := &manifestFlags{}
	cmd := cli.Command("apply", "Apply a manifest on every selected host (with --noop: audit it)")
	cmd.Arg("manifest", "The manifest file (YAML or JSON); files its relative sources name are sent with it").Required().ExistingFileVar(&c.path)
	c.register(cmd, runFlagOptions{noop: true})
	cmd.Action(func(*fisk.ParseContext) error { return a.applyManifest(c) })

	audit := &manifestFlags{}
	cmd = cli.Command("audit", "Report per resource which hosts drifted from a manifest, changing nothing (exit 5 on drift)")
	cmd.Arg("manifest", "The manifest file (YAML or JSON); files its relative sources name are sent with it").Required().ExistingFileVar(&audit.path)
	audit.register(cmd, runFlagOptions{})
	cmd.Action(func(*fisk.ParseContext) error {
		audit.noop = true
		return a.applyManifest(audit)
	})
}

// applyManifest loads and bundles the manifest, sends it and renders the
// result per resource.
func (a *app) applyManifest(c *manifestFlags) error {
	req, err := c.request()
	if err != nil {
		return usageError(err)
	}
	m, err := manifest.Load(c.path)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if req.Manifest, err = manifest.NewBundle(m); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	// Refuse what every agent would refuse before connecting, so a typo
	// sends nothing and records nothing.
	if err := orchestrator.CheckManifest(m); err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("%s: %w", c.path, err))
	}
	req.ManifestName = c.path
	return a.send(&c.runFlags, req, renderManifestResult)
}
