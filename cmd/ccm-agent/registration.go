package main

import (
	"context"
	"maps"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/regcmd"
)

// registerRegistration adds CCM's "registration" commands, the same as
// ccm-orch's (cmd/internal/regcmd).
func (a *app) registerRegistration(cli *fisk.Application) {
	regcmd.Register(cli, &regcmd.Env{Name: "ccm-agent", Stdout: a.Stdout, Stderr: a.Stderr, Stdin: a.in, Context: context.Background(), Logger: a.Logger})
}

func init() {
	maps.Copy(examples, regcmd.Examples("ccm-agent"))
}
