package main

import (
	"github.com/ccm-fleet/ccm/cmd/internal/program"

	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// commonFlags are the flags every "ensure <type>" takes.
type commonFlags struct {
	common resflags.Common
	// noop is the --noop of "ensure", given before or after the type.
	noop  *bool
	json  bool
	facts factFlags
	diff  diffFlags
}

func (c *commonFlags) register(cmd *fisk.CmdClause, t resflags.TypeFlags) {
	c.common.Register(cmd, t)
	cmd.Flag("json", "Print the io.choria.ccm.v1.resource.ensure.response document").BoolVar(&c.json)
	c.facts.register(cmd)
	c.diff.register(cmd)
}

func (a *app) registerEnsure(cli *fisk.Application) {
	ens := cli.Command("ensure", "Bring one resource to its desired state on this host")
	// On "ensure" itself, so that it may come before the type as in CCM
	// ("ensure --noop file ...") or after it.
	noop := ens.Flag("noop", "Report what would change without changing anything").Bool()
	for _, t := range resflags.Table {
		cmd := ens.Command(t.Type, t.Help)
		c := &commonFlags{noop: noop}
		c.register(cmd, t)
		vals := resflags.Register(cmd, t)
		typeName := t.Type
		cmd.Action(func(*fisk.ParseContext) error {
			props, err := vals.Properties()
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			if props, err = c.common.Properties(props); err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			return a.ensure(typeName, c, props)
		})
	}
	a.registerEnsureAPI(ens, noop)
}

// ensure applies one resource and prints the outcome.
func (a *app) ensure(typeName string, c *commonFlags, props map[string]any) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fs, err := c.facts.gather(ctx)
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	log := a.Logger()
	ex, unsupervise := superviseCommands(ctx, log, localInstance)
	defer unsupervise()
	reg, err := providers.Builtin(providers.Options{Runner: ex, Log: log})
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	eng := engine.New(reg, engine.WithLogger(log), engine.WithHealthRunner(providers.HealthRunner(ex)))
	env := templates.New(fs, nil, templates.WithEnviron(os.Environ()), templates.WithFiles(cwd))
	ev, err := eng.Ensure(ctx, engine.RunOptions{Noop: *c.noop, Env: env, WorkingDir: cwd, DiffLimit: c.diff.maxBytes},
		engine.Spec{Type: typeName, Properties: props})

	if c.json {
		b, merr := protocol.NewEnsureResponse(ev, err).Marshal(protocol.EncodingJSON)
		if merr != nil {
			return program.Exit(protocol.ExitError, merr)
		}
		fmt.Fprintln(a.Stdout, string(b))
		if err != nil {
			return program.Exit(protocol.ExitError, nil)
		}
	} else if err != nil {
		return program.Exit(protocol.ExitError, err)
	} else {
		fmt.Fprintln(a.Stdout, describeEvent(ev))
		writeHealth(a.Stdout, ev)
		c.diff.write(a.Stdout, ev)
	}
	if code := protocol.EventsExitCode(*c.noop, ev); code != protocol.ExitOK {
		return program.Exit(code, nil)
	}
	return nil
}
