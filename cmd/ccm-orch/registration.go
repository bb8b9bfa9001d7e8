package main

import (
	"maps"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/regcmd"
)

// registerRegistration adds the registration commands ccm-agent shares
// (cmd/internal/regcmd).
func (a *app) registerRegistration(cli *fisk.Application) {
	regcmd.Register(cli, &regcmd.Env{Name: "ccm-orch", Stdout: a.Stdout, Stderr: a.Stderr, Context: a.ctx, Logger: a.Logger})
}

func init() {
	maps.Copy(examples, regcmd.Examples("ccm-orch"))
}
