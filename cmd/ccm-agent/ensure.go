package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// commonFlags are the flags every "ensure <type>" takes.
type commonFlags struct {
	name     string
	ensure   string
	alias    string
	provider string
	ifExpr   string
	unless   string
	noop     bool
	json     bool
	facts    factFlags
}

func (c *commonFlags) register(cmd *fisk.CmdClause, t resflags.TypeFlags) {
	cmd.Arg("name", t.NameHelp).Required().StringVar(&c.name)
	cmd.Arg("ensure", "Desired state: "+t.EnsureHelp).StringVar(&c.ensure)
	cmd.Flag("alias", "Second name for require/subscribe references").StringVar(&c.alias)
	cmd.Flag("provider", "Force a provider instead of choosing one by facts").StringVar(&c.provider)
	cmd.Flag("if", "Manage only when this expression is true, e.g. \"facts.os == 'debian'\"").PlaceHolder("EXPR").StringVar(&c.ifExpr)
	cmd.Flag("unless", "Do not manage when this expression is true").PlaceHolder("EXPR").StringVar(&c.unless)
	cmd.Flag("noop", "Report what would change without changing anything").BoolVar(&c.noop)
	cmd.Flag("json", "Print the io.choria.ccm.v1.resource.ensure.response document").BoolVar(&c.json)
	c.facts.register(cmd)
}

// properties merges the common flags into the type's properties.
func (c *commonFlags) properties(typeProps map[string]any) map[string]any {
	typeProps["name"] = c.name
	for k, v := range map[string]string{"ensure": c.ensure, "alias": c.alias, "provider": c.provider} {
		if v != "" {
			typeProps[k] = v
		}
	}
	if c.ifExpr != "" || c.unless != "" {
		control := map[string]any{}
		if c.ifExpr != "" {
			control["if"] = c.ifExpr
		}
		if c.unless != "" {
			control["unless"] = c.unless
		}
		typeProps["control"] = control
	}
	return typeProps
}

func (a *app) registerEnsure(cli *fisk.Application) {
	ens := cli.Command("ensure", "Bring one resource to its desired state on this host")
	for _, t := range resflags.Table {
		cmd := ens.Command(t.Type, t.Help)
		c := &commonFlags{}
		c.register(cmd, t)
		vals := resflags.Register(cmd, t)
		typeName := t.Type
		cmd.Action(func(*fisk.ParseContext) error {
			props, err := vals.Properties()
			if err != nil {
				return exitWith(protocol.ExitError, err)
			}
			return a.ensure(typeName, c, c.properties(props))
		})
	}
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
		return exitWith(protocol.ExitError, err)
	}
	log := a.logger()
	reg, err := providers.Builtin(providers.Options{Runner: runner.Exec{}, Log: log})
	if err != nil {
		return exitWith(protocol.ExitError, err)
	}
	eng := engine.New(reg, engine.WithLogger(log))
	env := templates.New(fs, nil, templates.WithEnviron(os.Environ()), templates.WithFiles(cwd))
	ev, err := eng.Ensure(ctx, engine.RunOptions{Noop: c.noop, Env: env, WorkingDir: cwd},
		engine.Spec{Type: typeName, Properties: props})

	if c.json {
		b, merr := protocol.NewEnsureResponse(ev, err).Marshal(protocol.EncodingJSON)
		if merr != nil {
			return exitWith(protocol.ExitError, merr)
		}
		fmt.Fprintln(a.stdout, string(b))
		if err != nil {
			return exitWith(protocol.ExitError, nil)
		}
	} else if err != nil {
		return exitWith(protocol.ExitError, cleanInvalid(err))
	} else {
		fmt.Fprintln(a.stdout, describeEvent(ev))
	}
	if code := protocol.EventsExitCode(c.noop, ev); code != protocol.ExitOK {
		return exitWith(code, nil)
	}
	return nil
}

// cleanInvalid drops the sentinel's own words from a validation error so the
// one line a user sees names only the resource and the problem.
func cleanInvalid(err error) error {
	if !errors.Is(err, resources.ErrInvalid) {
		return err
	}
	return errors.New(removeSentinel(err.Error(), resources.ErrInvalid.Error()+": "))
}
