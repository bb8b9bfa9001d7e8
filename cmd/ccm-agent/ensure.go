package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// commonFlags are the flags every "ensure <type>" takes.
type commonFlags struct {
	common resflags.Common
	// noop is the --noop of "ensure", given before or after the type.
	noop *bool
	// data are the hiera and .env sources of "ensure".
	data *dataFlags
	// session are --session of "ensure" and this type's --require and
	// --subscribe.
	session sessionFlags
	json    bool
	facts   factFlags
	diff    diffFlags
	// conn is the NATS connection kvGet() reads buckets with, made at
	// its first call and never otherwise (as in apply).
	conn *connflags.Flags
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
	data := &dataFlags{warn: a.Stderr}
	data.register(ens)
	store := registerSessionStore(ens)
	a.registerPackageLockTimeout(ens)
	noRegistration := registerNoRegistration(ens)
	conn := connflags.Register(ens)
	for _, t := range resflags.Table {
		cmd := ens.Command(t.Type, t.Help)
		c := &commonFlags{noop: noop, data: data, session: sessionFlags{dir: store}, conn: conn}
		c.register(cmd, t)
		c.session.register(cmd, t)
		vals := resflags.Register(cmd, t)
		typeName := t.Type
		cmd.Action(func(*fisk.ParseContext) error {
			if err := noRegistration(); err != nil {
				return err
			}
			props, err := vals.Properties()
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			if props, err = c.common.Properties(props); err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			if err := localDefaults(typeName, props); err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			return a.ensure(typeName, c, props)
		})
	}
	a.registerEnsureAPI(ens, noop, data)
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
	eng, unsupervise, err := localEngine(ctx, a.Logger(), localInstance, a.packageLockTimeout)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	defer unsupervise()
	c.data.log = a.warnLogger()
	data, err := c.data.data(fs)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	environ, err := c.data.environ()
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	kv := &lazyKV{flags: c.conn, log: a.Logger()}
	defer kv.Close()
	env := templates.New(fs, data, templates.WithEnviron(environ), templates.WithFiles(cwd), templates.WithKV(kv, 0))
	ev, err := c.run(ctx, eng, engine.RunOptions{Noop: *c.noop, Env: env, WorkingDir: cwd, DiffLimit: c.diff.maxBytes},
		engine.Spec{Type: typeName, Properties: props})
	if errors.Is(err, errSession) {
		return program.Exit(protocol.ExitError, err)
	}

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

// errSession marks a session that could not be read or written.
var errSession = errors.New("session")

// run applies the resource, honouring the session: a resource whose
// requirements failed is skipped, one whose subscriptions changed is
// refreshed, and the event is recorded.
func (c *commonFlags) run(ctx context.Context, eng *engine.Engine, opts engine.RunOptions, spec engine.Spec) (*protocol.TransactionEvent, error) {
	sess, err := c.session.open()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSession, err)
	}
	if sess == nil {
		return eng.Ensure(ctx, opts, spec)
	}
	unmet, err := sess.unmet(c.session.require)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSession, err)
	}
	triggers, err := sess.changed(c.session.subscribe)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSession, err)
	}
	var ev *protocol.TransactionEvent
	if len(unmet) > 0 {
		name, _ := spec.Properties["name"].(string)
		alias, _ := spec.Properties["alias"].(string)
		ev = protocol.NewTransactionEvent(engine.NewID(), spec.Type, name, alias)
		ev.RequestedEnsure, _ = spec.Properties["ensure"].(string)
		ev.Noop = opts.Noop
		ev.Skipped = true
		ev.UnmetRequirements = unmet
	} else {
		es := eng.NewSession(opts)
		p, err := es.Prepare(spec)
		if err != nil {
			return nil, err
		}
		ev = es.Apply(ctx, p, engine.ApplyOptions{Refresh: len(triggers) > 0})
	}
	if err := sess.record(ev); err != nil {
		return ev, fmt.Errorf("%w: %w", errSession, err)
	}
	return ev, nil
}

// errNoRegistration answers CCM's --registration STREAM of ensure and
// apply, which makes registrations() read that stream.
var errNoRegistration = errors.New("--registration: registrations() reads the registration stream only in ccm-agent agent (its configuration's registration: jetstream); ensure and apply have no registrations(), see docs/ccm-agent.md#registration")

// registerNoRegistration adds CCM's -R/--registration (hidden) to cmd;
// the function returns errNoRegistration, exit 1, when it was given.
func registerNoRegistration(cmd *fisk.CmdClause) func() error {
	var stream string
	cmd.Flag("registration", "CCM's stream for registrations(): refused here").Short('R').Hidden().StringVar(&stream)
	return func() error {
		if stream != "" {
			return program.Exit(protocol.ExitError, errNoRegistration)
		}
		return nil
	}
}
