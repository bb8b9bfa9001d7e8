package main

import (
	"cmp"
	"context"
	"github.com/ccm-fleet/ccm/cmd/internal/program"

	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// errNoMatch is the line printed when a filter selects nobody.
var errNoMatch = errors.New("no host matched the filter")

// filterFlags are --where, --host and --select.
type filterFlags struct {
	where []string
	hosts []string
	sel   string
	// selSet: --select was given, even empty (an empty expression is
	// refused, not read as "every host").
	selSet bool
}

func (f *filterFlags) register(cmd *fisk.CmdClause) {
	cmd.Flag("where", "Select hosts by fact: k=v, k!=v, k=~re, k!~re, k<n, k<=n, k>n, k>=n (repeatable, ANDed)").
		Short('W').PlaceHolder("FILTER").StringsVar(&f.where)
	cmd.Flag("host", "Select a host by identity, or /regex/ (repeatable)").PlaceHolder("ID").StringsVar(&f.hosts)
	cmd.Flag("select", "Select hosts by a compound expression of --where terms with and, or, not and parentheses: \"(os=debian and role=web) or role=db\" (ANDed with --where and --host)").
		Short('S').PlaceHolder("EXPR").IsSetByUser(&f.selSet).StringVar(&f.sel)
}

// filter parses the flags; a filter that cannot parse is a usage error,
// a select expression's naming the flag and the position of the fault
// ("--select: at 17: expected ')' ...").
func (f *filterFlags) filter() (*protocol.Filter, error) {
	flt, err := protocol.NewFilter(f.where, f.hosts)
	if err != nil {
		return nil, program.Exit(protocol.ExitError, protocol.Plain(err))
	}
	if f.selSet {
		s, err := protocol.ParseSelect(f.sel)
		if err != nil {
			return nil, program.Exit(protocol.ExitError, fmt.Errorf("--select: %w", protocol.Plain(err)))
		}
		flt.Select = s.String()
		if err := flt.Compile(); err != nil {
			return nil, program.Exit(protocol.ExitError, fmt.Errorf("--select: %w", protocol.Plain(err)))
		}
	}
	if flt.Empty() {
		return nil, nil
	}
	return flt, nil
}

// tableFacts are the facts the discover table shows after the identity,
// under the headings of tableHeadings; the agent's version comes last.
var tableFacts = []string{"os", "platform", "platform_version", "role"}

// tableHeadings name the columns of the discover table. VERSION is the
// agent's version, as "version" is in --json and on the dashboard; the
// platform's own version is OS_VERSION.
var tableHeadings = []string{"IDENTITY", "OS", "PLATFORM", "OS_VERSION", "ROLE", "VERSION"}

func (a *app) registerDiscover(cli *fisk.Application) {
	var (
		sel selection
		js  bool
		yml bool
		fcs []string
	)
	cmd := cli.Command("discover", "List the hosts a filter selects, with their key facts")
	sel.register(cmd)
	cmd.Flag("json", "Print the hosts and their announced facts as JSON").BoolVar(&js)
	yamlFlag(cmd, &yml)
	cmd.Flag("fact", "Add a column with each host's value of this fact; a dotted path reaches into nested facts (repeatable)").PlaceHolder("KEY").StringsVar(&fcs)
	sel.conn = connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		if err := oneFormat(map[string]bool{"--json": js, "--yaml": yml}); err != nil {
			return err
		}
		for _, k := range fcs {
			if err := protocol.CheckFactKey(k); err != nil {
				return program.Exit(protocol.ExitError, fmt.Errorf("--fact: %w", protocol.Plain(err)))
			}
		}
		nodes, err := a.discoverSelected(&sel, fcs)
		if err != nil {
			return err
		}
		if js || yml {
			if err := a.printDoc(nodes, yml); err != nil {
				return err
			}
		} else if len(nodes) > 0 {
			a.printNodes(nodes, fcs)
		}
		if len(nodes) == 0 {
			return program.Exit(protocol.ExitNoMatch, errNoMatch)
		}
		return nil
	})
}

// selection is what discover and facts share: the hosts' filter and
// targeting flags, how they are found, and the connection.
type selection struct {
	flt  filterFlags
	tgt  targetFlags
	dsc  discoveryFlags
	conn *connflags.Flags
}

// register adds the filter, targeting and discovery flags (the command
// registers the connection flags, after its own).
func (s *selection) register(cmd *fisk.CmdClause) {
	s.flt.register(cmd)
	s.tgt.register(cmd)
	s.dsc.register(cmd)
	refuseFlag(cmd, "timeout", "the discovery round's deadline is --discovery-timeout (--timeout is only an exec command's own timeout)")
}

// discoverSelected connects and finds the hosts s selects, with the facts
// named (see discoverNarrowed).
func (a *app) discoverSelected(s *selection, facts []string) ([]orchestrator.Node, error) {
	filter, err := s.flt.filter()
	if err != nil {
		return nil, err
	}
	narrow, err := s.tgt.narrowing()
	if err != nil {
		return nil, program.Exit(protocol.ExitError, err)
	}
	ctx, stop := a.signalContext()
	defer stop()
	nc, err := a.connect(ctx, s.conn)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return a.discoverNarrowed(ctx, nc, filter, facts, narrow, &s.tgt, &s.dsc)
}

// discoverNarrowed finds the hosts filter selects, with the facts named
// (those with dotted paths asked of the agents), and keeps those narrow
// (from tgt) keeps, saying on stderr when discovery fell back to a
// broadcast and how the hosts were sampled.
func (a *app) discoverNarrowed(ctx context.Context, nc *nats.Conn, filter *protocol.Filter, facts []string, narrow *orchestrator.Narrowing, tgt *targetFlags, dsc *discoveryFlags) ([]orchestrator.Node, error) {
	client := orchestrator.New(nc, orchestrator.WithLogger(a.Logger()))
	if err := tgt.resolve(ctx, client, narrow); err != nil {
		return nil, program.Exit(protocol.ExitError, err)
	}
	opts := dsc.options(filter)
	for _, k := range facts {
		if strings.Contains(k, ".") && !slices.Contains(opts.Facts, k) {
			opts.Facts = append(opts.Facts, k)
		}
	}
	found, err := client.DiscoverHosts(ctx, opts)
	if err != nil {
		return nil, program.Exit(protocol.ExitError, err)
	}
	if found.Fallback != "" {
		renderFallback(a.Stderr, found.Fallback, len(found.Nodes))
	}
	if narrow == nil {
		return found.Nodes, nil
	}
	nodes, sample := narrow.ApplyNodes(found.Nodes)
	renderSample(a.Stderr, sample)
	return nodes, nil
}

// printNodes writes an aligned table of the nodes' key facts, then a
// column for each of extra (--fact), headed by its name.
func (a *app) printNodes(nodes []orchestrator.Node, extra []string) {
	tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(append(slices.Clone(tableHeadings), extra...), "\t"))
	for _, n := range nodes {
		row := []string{n.Identity}
		for _, k := range tableFacts {
			v, ok := n.Facts[k]
			if !ok || v == nil || fmt.Sprint(v) == "" {
				row = append(row, "-")
				continue
			}
			row = append(row, fmt.Sprint(v))
		}
		row = append(row, cmp.Or(n.Version, "-"))
		for _, k := range extra {
			row = append(row, cmp.Or(factText(n.Facts, k), "-"))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
	fmt.Fprintf(a.Stdout, "%s\n", countHosts(len(nodes)))
}

// discoveryFlags are how a command finds its hosts: --discovery,
// --discovery-timeout and --discovery-quiet.
type discoveryFlags struct {
	mode           string
	timeout, quiet time.Duration
}

func (d *discoveryFlags) register(cmd *fisk.CmdClause) {
	cmd.Flag("discovery", "How to find hosts: auto (the node registry; a broadcast when it cannot be read, is stale or selects nobody), registry or broadcast").
		Default(string(orchestrator.DiscoveryAuto)).
		EnumVar(&d.mode, string(orchestrator.DiscoveryAuto), string(orchestrator.DiscoveryRegistry), string(orchestrator.DiscoveryBroadcast))
	program.DurationVar(cmd.Flag("discovery-timeout", "Longest discovery round; a broadcast round ends earlier once hosts stop answering (--discovery-quiet)").Default("2s"), &d.timeout)
	program.DurationVar(cmd.Flag("discovery-quiet", "A broadcast discovery round ends once no host answered for this long; as long as --discovery-timeout, it lasts the whole timeout (for a busy cluster whose hosts answer late)").
		Default(orchestrator.DefaultDiscoveryQuiet.String()), &d.quiet)
}

// options are the discovery options of the flags, for filter.
func (d *discoveryFlags) options(filter *protocol.Filter) orchestrator.DiscoverOptions {
	return orchestrator.DiscoverOptions{Filter: filter, Timeout: d.timeout, Quiet: d.quiet, Mode: orchestrator.DiscoveryMode(d.mode)}
}

// sender names who sends requests, in history: user@host.
func sender() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		name += "@" + h
	}
	return name
}
