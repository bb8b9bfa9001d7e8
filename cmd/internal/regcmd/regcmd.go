// Package regcmd is the "registration" command of ccm-orch and ccm-agent
// (CCM has it in ccm): query, watch, rm, unbind and init on the
// registration stream, one implementation for both binaries.
package regcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/cmd/internal/provision"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
	"github.com/ccm-fleet/ccm/trust/policy"
)

// connectTimeout bounds the initial connection.
const connectTimeout = 10 * time.Second

// Env is what the commands need from the binary that runs them.
type Env struct {
	// Name is the binary's name, given to the NATS connection.
	Name string
	// Stdout and Stderr are where the commands print.
	Stdout, Stderr io.Writer
	// Stdin answers rm's and unbind's confirmation; nil is os.Stdin.
	Stdin io.Reader
	// Context is the parent of every command's context (SIGINT and
	// SIGTERM end it too); nil is context.Background().
	Context context.Context
	// Logger is the connection's logger; nil logs nothing.
	Logger func() *slog.Logger
}

func (a *Env) stdin() io.Reader {
	if a.Stdin == nil {
		return os.Stdin
	}
	return a.Stdin
}

// signalContext is the parent context, also ended by SIGINT and SIGTERM.
func (a *Env) signalContext() (context.Context, context.CancelFunc) {
	ctx := a.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
}

func (a *Env) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Logger()
}

func (a *Env) connect(ctx context.Context, c *connflags.Flags) (*nats.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	opts, err := c.Options(a.Name, a.logger(), natsconn.Options{})
	if err != nil {
		return nil, program.Exit(protocol.ExitError, err)
	}
	nc, err := natsconn.Connect(cctx, opts)
	if err != nil {
		return nil, program.Exit(protocol.ExitError, c.Explain(err, opts, natsconn.Options{}, ""))
	}
	return nc, nil
}

func entries(n int) string {
	if n == 1 {
		return "entry"
	}
	return "entries"
}

// registrationFilter are the positional filters and the stream flag that
// query and watch share.
type registrationFilter struct {
	cluster, protocol, service, address string
	stream                              string
	json                                bool
	policy                              string
	conn                                *connflags.Flags
}

// trust is whose entries the reader accepts: the keys the --policy file's
// registration.publishers pins, else the node registry's, else the
// hosts' bindings.
func (f *registrationFilter) trust(js jetstream.JetStream) (*registration.Trust, error) {
	t := &registration.Trust{JS: js, Stream: f.stream, Registry: true}
	if f.policy != "" {
		p, err := policy.LoadPolicy(f.policy)
		if err != nil {
			return nil, program.Exit(protocol.ExitError, err)
		}
		t.Pinned = p.RegistrationPublishers()
	}
	return t, nil
}

func (f *registrationFilter) register(cmd *fisk.CmdClause) {
	cmd.Arg("cluster", "Cluster, * for any").Default("*").StringVar(&f.cluster)
	cmd.Arg("protocol", "Protocol, * for any").Default("*").StringVar(&f.protocol)
	cmd.Arg("service", "Service, * for any").Default("*").StringVar(&f.service)
	cmd.Arg("address", "Address, * for any").Default("*").StringVar(&f.address)
	cmd.Flag("registration", "The registration stream").Short('R').Default(registration.DefaultStream).StringVar(&f.stream)
	cmd.Flag("json", "Print JSON").UnNegatableBoolVar(&f.json)
	cmd.Flag("policy", "Policy file whose registration.publishers pins hosts' registration keys").PlaceHolder("FILE").StringVar(&f.policy)
	f.conn = connflags.Register(cmd)
}

// Register adds "registration" (query, watch, rm, unbind, init) to cli,
// the same commands in ccm-orch and ccm-agent.
func Register(cli *fisk.Application, env *Env) {
	a := env
	reg := cli.Command("registration", "Query, watch and remove the service registrations agents publish").Alias("reg").Alias("r")

	q := &registrationFilter{}
	var asYAML bool
	query := reg.Command("query", "List the registered entries signed by the key of the host each names, sorted by cluster, protocol and service; refused entries are counted on stderr with the reason").Alias("q")
	q.register(query)
	query.Flag("yaml", "Print YAML").UnNegatableBoolVar(&asYAML)
	query.Action(func(*fisk.ParseContext) error { return a.registrationQuery(q, asYAML) })

	w := &registrationFilter{}
	watch := reg.Command("watch", "Print registrations as they are published and removed (TTL expiry, deletion, purge) until interrupted")
	w.register(watch)
	watch.Action(func(*fisk.ParseContext) error { return a.registrationWatch(w) })

	var (
		e      registration.Entry
		stream string
		force  bool
	)
	rm := reg.Command("rm", "Remove one registration entry now").Alias("delete")
	rm.Flag("cluster", "Logical cluster name").Required().StringVar(&e.Cluster)
	rm.Flag("service", "Service name").Required().StringVar(&e.Service)
	rm.Flag("protocol", "Protocol identifier").Required().StringVar(&e.Protocol)
	rm.Flag("address", "Address of the endpoint").Required().StringVar(&e.Address)
	rm.Flag("port", "Port of the endpoint (1-65535)").Required().IntVar(&e.Port)
	rm.Flag("force", "Do not ask for confirmation").UnNegatableBoolVar(&force)
	rm.Flag("registration", "The registration stream").Short('R').Default(registration.DefaultStream).StringVar(&stream)
	rmConn := connflags.Register(rm)
	rm.Action(func(*fisk.ParseContext) error { return a.registrationRm(&e, stream, force, rmConn) })

	var (
		unbindHost   string
		unbindStream string
		unbindForce  bool
	)
	unbind := reg.Command("unbind", "Free a host name bound to a registration key (after the host's key changed): the next key to publish for it is bound")
	unbind.Arg("host", "The host's identity").Required().StringVar(&unbindHost)
	unbind.Flag("force", "Do not ask for confirmation").UnNegatableBoolVar(&unbindForce)
	unbind.Flag("registration", "The registration stream").Short('R').Default(registration.DefaultStream).StringVar(&unbindStream)
	unbindConn := connflags.Register(unbind)
	unbind.Action(func(*fisk.ParseContext) error {
		return a.registrationUnbind(unbindHost, unbindStream, unbindForce, unbindConn)
	})

	// CCM's "registration create" publishes an entry signed by no host;
	// here an entry is the agent's, signed with the host's key. The
	// command takes CCM's flags so that its one line is what is said.
	var ignored struct {
		cluster, service, protocol, address, ttl, stream string
		port, priority                                   int
		annotations                                      []string
	}
	create := reg.Command("create", "CCM's command to publish an entry by hand: refused, entries are published by the agent of the host they name").Alias("c").Hidden()
	create.Flag("cluster", "").StringVar(&ignored.cluster)
	create.Flag("service", "").StringVar(&ignored.service)
	create.Flag("protocol", "").StringVar(&ignored.protocol)
	create.Flag("address", "").StringVar(&ignored.address)
	create.Flag("port", "").IntVar(&ignored.port)
	create.Flag("priority", "").IntVar(&ignored.priority)
	create.Flag("ttl", "").StringVar(&ignored.ttl)
	create.Flag("annotation", "").Short('A').StringsVar(&ignored.annotations)
	create.Flag("registration", "").Short('R').StringVar(&ignored.stream)
	create.Action(func(*fisk.ParseContext) error {
		return program.Exit(protocol.ExitError, fmt.Errorf("registration create is not here: an entry is published by the agent of the host it names, signed with that host's key, from a resource's register_when_stable (see docs/ccm-agent.md#registration)"))
	})

	var (
		initStream   string
		initReplicas int
		initMaxAge   time.Duration
	)
	ini := reg.Command("init", "Create or update the registration stream (history init makes the default one too): one message per entry, per-entry TTLs, markers of expired entries kept --max-age")
	ini.Flag("registration", "The registration stream").Short('R').Default(registration.DefaultStream).StringVar(&initStream)
	ini.Flag("replicas", "Servers keeping each entry (a cluster of 3: 3)").Default("1").IntVar(&initReplicas)
	program.DurationVar(ini.Flag("max-age", "How long an entry without a TTL, and the marker of an expired one, is kept").Default(registration.DefaultMaxAge.String()), &initMaxAge)
	iniConn := connflags.Register(ini)
	ini.Action(func(*fisk.ParseContext) error {
		return a.registrationInit(initStream, initReplicas, initMaxAge, iniConn)
	})
}

// registrationInit creates or updates the registration stream; running
// it again with the same settings changes nothing.
func (a *Env) registrationInit(stream string, replicas int, maxAge time.Duration, c *connflags.Flags) error {
	if replicas < 1 || replicas > 5 {
		return program.Exit(protocol.ExitError, fmt.Errorf("registration init: --replicas %d must be between 1 and 5", replicas))
	}
	if maxAge <= 0 {
		return program.Exit(protocol.ExitError, fmt.Errorf("registration init: --max-age %s must be positive", maxAge))
	}
	ctx, cancel := a.signalContext()
	defer cancel()
	js, done, err := a.registrationJS(ctx, c)
	if err != nil {
		return err
	}
	defer done()
	if _, err := registration.EnsureStream(ctx, js, stream, replicas, maxAge); err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("registration init: %w", err))
	}
	fmt.Fprintf(a.Stdout, "registration stream %s: %s, per-entry TTLs, expired entries' markers kept %s\n", stream, provision.ReplicasText(replicas), maxAge)
	return nil
}

// withRegistration connects (until a signal ends it), runs fn against
// JetStream and disconnects; fn's error is an ExitError.
func (a *Env) withRegistration(c *connflags.Flags, fn func(context.Context, jetstream.JetStream) error) error {
	ctx, cancel := a.signalContext()
	defer cancel()
	js, done, err := a.registrationJS(ctx, c)
	if err != nil {
		return err
	}
	defer done()
	if err := fn(ctx, js); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	return nil
}

func (a *Env) registrationJS(ctx context.Context, c *connflags.Flags) (jetstream.JetStream, func(), error) {
	nc, err := a.connect(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, program.Exit(protocol.ExitError, err)
	}
	return js, nc.Close, nil
}

func (a *Env) registrationQuery(f *registrationFilter, asYAML bool) error {
	ctx, cancel := a.signalContext()
	defer cancel()
	js, done, err := a.registrationJS(ctx, f.conn)
	if err != nil {
		return err
	}
	defer done()
	trust, err := f.trust(js)
	if err != nil {
		return err
	}
	recs, skipped, err := registration.Query(ctx, js, f.stream, trust, f.cluster, f.protocol, f.service, f.address)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if recs == nil {
		recs = []registration.Record{}
	}
	switch {
	case f.json:
		b, _ := json.MarshalIndent(recs, "", "  ")
		fmt.Fprintln(a.Stdout, string(b))
	case asYAML:
		b, err := yaml.Marshal(recs)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		fmt.Fprint(a.Stdout, string(b))
	default:
		last := ""
		for _, r := range recs {
			if head := r.Service + " in " + r.Cluster; head != last {
				fmt.Fprintf(a.Stdout, "%s:\n", head)
				last = head
			}
			fmt.Fprintf(a.Stdout, "  %s://%s%s priority %d%s host %s\n", r.Protocol, r.Address, portText(r.Port), r.Priority, ttlText(r.TTL), r.Host)
		}
		if len(recs) == 0 {
			fmt.Fprintln(a.Stdout, "no registrations")
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(a.Stderr, "warning: entry %s dropped: %s\n", s.Subject, s.Reason)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(a.Stderr, "warning: %d %s refused and not listed (reasons above)\n", len(skipped), entries(len(skipped)))
	}
	return nil
}

func (a *Env) registrationUnbind(host, stream string, force bool, c *connflags.Flags) error {
	if err := protocol.ValidateIdentity(host); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if !force && !a.confirm(fmt.Sprintf("Free the host name %s for the next key that registers it?", host)) {
		return program.Exit(protocol.ExitError, fmt.Errorf("not unbound"))
	}
	err := a.withRegistration(c, func(ctx context.Context, js jetstream.JetStream) error {
		return registration.Unbind(ctx, js, stream, host)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "unbound %s\n", host)
	return nil
}

func portText(p int) string {
	if p == 0 {
		return ""
	}
	return fmt.Sprintf(":%d", p)
}

func ttlText(t string) string {
	if t == "" {
		return ""
	}
	return " ttl " + t
}

func (a *Env) registrationWatch(f *registrationFilter) error {
	ctx, cancel := a.signalContext()
	defer cancel()
	js, done, err := a.registrationJS(ctx, f.conn)
	if err != nil {
		return err
	}
	defer done()
	trust, err := f.trust(js)
	if err != nil {
		return err
	}
	err = registration.Watch(ctx, js, f.stream, trust, f.cluster, f.protocol, f.service, f.address, func(ev registration.Event) error {
		if f.json {
			b, _ := json.Marshal(ev)
			fmt.Fprintln(a.Stdout, string(b))
			return nil
		}
		if ev.Skipped != "" {
			fmt.Fprintf(a.Stderr, "warning: entry %s dropped: %s\n", ev.Subject, ev.Skipped)
			return nil
		}
		if ev.Record != nil {
			r := ev.Record
			fmt.Fprintf(a.Stdout, "registered %s in %s: %s://%s%s priority %d%s host %s\n", r.Service, r.Cluster, r.Protocol, r.Address, portText(r.Port), r.Priority, ttlText(r.TTL), r.Host)
		} else {
			fmt.Fprintf(a.Stdout, "removed %s: %s\n", ev.Subject, ev.Removed)
		}
		return nil
	})
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	return nil
}

func (a *Env) registrationRm(e *registration.Entry, stream string, force bool, c *connflags.Flags) error {
	e.Priority = 1 // not part of the entry's identity; set so it validates
	if err := e.Validate(); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if !force && !a.confirm(fmt.Sprintf("Remove %s %s://%s:%d from %s?", e.Service, e.Protocol, e.Address, e.Port, e.Cluster)) {
		return program.Exit(protocol.ExitError, fmt.Errorf("not removed"))
	}
	err := a.withRegistration(c, func(ctx context.Context, js jetstream.JetStream) error {
		return registration.Remove(ctx, js, stream, e)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "removed %s\n", e.Subject())
	return nil
}

// confirm asks question on standard output and reports whether the answer
// read from standard input is yes.
func (a *Env) confirm(question string) bool {
	fmt.Fprintf(a.Stdout, "%s [y/N] ", question)
	line, _ := bufio.NewReader(a.stdin()).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}

// Examples are the commands' examples for prog's --help (ccm-orch,
// ccm-agent).
func Examples(prog string) program.Examples {
	ex := program.Examples{
		"registration query": `
# Every registered entry, then the http web servers of production as JSON
PROG registration query
PROG registration query production http web --json
# Trust the host keys the policy's registration.publishers pins
PROG registration query production http web --policy site.yaml
`,
		"registration watch": `
# Follow web registrations of production as they come and go
PROG registration watch production http web
PROG registration watch --json
`,
		"registration rm": `
# Remove one endpoint now, without asking
PROG registration rm --cluster production --service web --protocol http --address 10.0.0.5 --port 8080 --force
`,
		"registration unbind": `
# web1's key changed: free its name for the next key that registers it
PROG registration unbind web1 --force
`,
		"registration init": `
# Create the registration stream, markers of expired entries kept 10 minutes
PROG registration init --max-age 10m
`,
	}
	for k, v := range ex {
		ex[k] = strings.ReplaceAll(v, "PROG ", prog+" ")
	}
	return ex
}
