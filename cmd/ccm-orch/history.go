package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/diffview"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/cmd/internal/provision"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// historyTimeFormat is how listings print times (local time).
const historyTimeFormat = "2006-01-02 15:04:05"

func (a *app) registerHistory(cli *fisk.Application) {
	h := cli.Command("history", "Set up and read the history of fleet requests kept in JetStream")
	a.registerHistoryInit(h)
	a.registerHistoryList(h)
	a.registerHistoryShow(h)
	a.registerHistoryHost(h)
}

func (a *app) registerHistoryInit(h *fisk.CmdClause) {
	var (
		replicas      int
		maxAge, bytes string
		ttl           time.Duration
	)
	cmd := h.Command("init", "Create or update the history stream CCM_HISTORY, the node registry CCM_NODES and the assignment store CCM_ASSIGNMENTS on an existing NATS")
	cmd.Flag("replicas", "Servers keeping each record (a cluster of 3: 3)").Default("1").IntVar(&replicas)
	cmd.Flag("max-age", "How long records are kept (s, m, h or d)").Default("30d").StringVar(&maxAge)
	cmd.Flag("max-bytes", "Size limit of the history, the oldest records go first (e.g. 10GiB; -1: none)").Default("-1").StringVar(&bytes)
	program.DurationVar(cmd.Flag("registry-ttl", "How long a registry entry lives after its agent's last heartbeat").Default(jsstore.DefaultRegistryTTL.String()), &ttl)
	conn := connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		age, err := provision.ParseAge(maxAge)
		if err != nil {
			return program.Exit(protocol.ExitError, fmt.Errorf("--max-age: %w", err))
		}
		size, err := provision.ParseSize(bytes)
		if err != nil {
			return program.Exit(protocol.ExitError, fmt.Errorf("--max-bytes: %w", err))
		}
		hc := jsstore.HistoryConfig{Replicas: replicas, MaxAge: age, MaxBytes: size}
		rc := jsstore.RegistryConfig{Replicas: replicas, TTL: ttl}
		if err := errors.Join(hc.Validate(), rc.Validate()); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		ctx, stop := a.signalContext()
		defer stop()
		nc, err := a.connect(ctx, conn)
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := provision.Streams(ctx, js, hc, rc, "", a.Stdout); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		return nil
	})
}

func (a *app) registerHistoryList(h *fisk.CmdClause) {
	var (
		since, host string
		limit       int
		js, yml     bool
	)
	cmd := h.Command("list", "List recent requests: when, what was asked, the filter and the host counts")
	cmd.Flag("since", "Only requests of this recent past (s, m, h or d)").Default("24h").StringVar(&since)
	cmd.Flag("host", "Only requests that expected or heard from this host").PlaceHolder("ID").StringVar(&host)
	cmd.Flag("limit", "At most this many requests, the most recent").Default(fmt.Sprint(orchestrator.DefaultHistoryLimit)).IntVar(&limit)
	cmd.Flag("json", "Print the list as JSON").BoolVar(&js)
	yamlFlag(cmd, &yml)
	conn := connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		if err := oneFormat(map[string]bool{"--json": js, "--yaml": yml}); err != nil {
			return err
		}
		age, err := provision.ParseAge(since)
		if err != nil {
			return program.Exit(protocol.ExitError, fmt.Errorf("--since: %w", err))
		}
		return a.withClient(conn, func(ctx context.Context, c *orchestrator.Client) error {
			list, err := c.HistoryList(ctx, orchestrator.HistoryListOptions{Since: time.Now().Add(-age), Host: host, Limit: limit})
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			if js || yml {
				return a.printDoc(list, yml)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.Stdout, "no requests")
				return nil
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tREQUEST\tASKED\tFILTER\tEXPECTED\tOK\tCHANGED\tWOULD CHANGE\tFAILED\tNO REPLY")
			for _, s := range list {
				asked := s.Asked
				if s.Noop && s.Asked != "" && !strings.HasPrefix(asked, "audit") {
					asked += " (noop)"
				}
				filter := s.Filter
				if filter == "" {
					filter = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", s.Time.Local().Format(historyTimeFormat), s.RequestID, asked, filter,
					s.Expected, s.Hosts.OK, s.Hosts.Changed, s.Hosts.WouldChange, s.Hosts.Failed, s.Hosts.NoReply)
			}
			return tw.Flush()
		})
	})
}

func (a *app) registerHistoryShow(h *fisk.CmdClause) {
	var (
		id                     string
		js, yml, diff, noColor bool
	)
	cmd := h.Command("show", "Print a request's report rebuilt from history, late replies included, with the live command's exit code")
	cmd.Arg("request", "The request id").Required().StringVar(&id)
	cmd.Flag("json", "Print the result document, as the live command's --json").BoolVar(&js)
	yamlFlag(cmd, &yml)
	cmd.Flag("diff", "Also print the diffs the hosts reported, grouped as the live --diff does (facts for grouping come from today's node registry)").UnNegatableBoolVar(&diff)
	cmd.Flag("no-color", "Do not colour added and removed lines of diffs").UnNegatableBoolVar(&noColor)
	conn := connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		if err := oneFormat(map[string]bool{"--json": js, "--yaml": yml}); err != nil {
			return err
		}
		return a.withClient(conn, func(ctx context.Context, c *orchestrator.Client) error {
			run, err := c.History(ctx, id)
			var missing *orchestrator.MissingRequestError
			if errors.As(err, &missing) {
				return a.printMissingRequest(missing, js || yml, yml)
			}
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			if js || yml {
				if err := a.printDoc(run.Result, yml); err != nil {
					return err
				}
			} else {
				r := run.Request
				fmt.Fprintf(a.Stdout, "request %s at %s by %s: %s", r.RequestID, r.Created.Local().Format(historyTimeFormat), orDash(r.Sender), orchestrator.DescribeRequest(r))
				if f := orchestrator.FilterString(r.Filter); f != "" {
					fmt.Fprintf(a.Stdout, " where %s", f)
				}
				if r.Listed > 0 {
					fmt.Fprintf(a.Stdout, ", of %s listed", countHosts(r.Listed))
				}
				if s := r.Sample; s != nil {
					fmt.Fprintf(a.Stdout, ", sampled %d of %s with --seed %d", s.Kept, countHosts(s.Of), s.Seed)
				}
				fmt.Fprintln(a.Stdout)
				out := wrapWidth(a.Stdout, terminalWidth(a.Stdout))
				if r.Ensure != nil {
					renderResult(out, run.Result, a.Verbose)
				} else {
					renderManifestResult(out, run.Result, a.Verbose)
				}
				_ = out.Flush()
				if diff {
					c.LoadFacts(ctx, run.Result)
					renderDiffGroups(a.Stdout, orchestrator.DiffGroups(run.Result), diffview.Colour(a.Stdout, noColor))
				}
			}
			if run.Result.ExitCode != protocol.ExitOK {
				return program.Exit(run.Result.ExitCode, nil)
			}
			return nil
		})
	})
}

func (a *app) registerHistoryHost(h *fisk.CmdClause) {
	var (
		id, since string
		limit     int
		js, yml   bool
	)
	cmd := h.Command("host", "Print one host's timeline of results")
	cmd.Arg("identity", "The host's identity").Required().StringVar(&id)
	cmd.Flag("since", "Only results of this recent past (s, m, h or d)").Default("24h").StringVar(&since)
	cmd.Flag("limit", "At most this many results, the most recent (0: all)").Default("100").IntVar(&limit)
	cmd.Flag("json", "Print the timeline as JSON").BoolVar(&js)
	yamlFlag(cmd, &yml)
	conn := connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		if err := oneFormat(map[string]bool{"--json": js, "--yaml": yml}); err != nil {
			return err
		}
		age, err := provision.ParseAge(since)
		if err != nil {
			return program.Exit(protocol.ExitError, fmt.Errorf("--since: %w", err))
		}
		return a.withClient(conn, func(ctx context.Context, c *orchestrator.Client) error {
			entries, err := c.HistoryHost(ctx, id, time.Now().Add(-age), limit)
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			if js || yml {
				return a.printDoc(entries, yml)
			}
			if len(entries) == 0 {
				fmt.Fprintf(a.Stdout, "no results of %s\n", id)
				return nil
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tREQUEST\tASKED\tOUTCOME\tDURATION\tPROBLEM")
			for _, e := range entries {
				outcome := e.Outcome
				if e.Late {
					outcome += " (late)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format(historyTimeFormat), e.RequestID, orDash(e.Asked), outcome,
					e.Duration.Round(time.Millisecond), orDash(entryProblem(e)))
			}
			return tw.Flush()
		})
	})
}

// printMissingRequest prints the host records of a request whose own
// record history does not hold (a table, or the error as JSON, or with yml
// YAML), and exits 1 with the explanation.
func (a *app) printMissingRequest(m *orchestrator.MissingRequestError, js, yml bool) error {
	if js {
		if err := a.printDoc(m, yml); err != nil {
			return err
		}
	} else if len(m.Hosts) > 0 {
		tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "IDENTITY\tOUTCOME\tDURATION\tPROBLEM")
		for _, h := range m.Hosts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.Identity, h.Outcome, h.Duration.Round(time.Millisecond),
				orDash(entryProblem(orchestrator.HostEntry{Error: h.Error, Events: h.Events})))
		}
		if err := tw.Flush(); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
	}
	return program.Exit(protocol.ExitError, m)
}

// entryProblem is the failure of a timeline entry, "" when none.
func entryProblem(e orchestrator.HostEntry) string {
	if e.Error != nil {
		return string(e.Error.Code) + ": " + e.Error.Message
	}
	var msgs []string
	for _, ev := range e.Events {
		if ev.Failed {
			msgs = append(msgs, ev.ResourceID()+": "+strings.Join(ev.Errors, "; "))
		}
	}
	return strings.Join(msgs, "; ")
}

// withClient connects as conn says and runs f with an orchestrator client.
func (a *app) withClient(conn *connflags.Flags, f func(context.Context, *orchestrator.Client) error) error {
	ctx, stop := a.signalContext()
	defer stop()
	nc, err := a.connect(ctx, conn)
	if err != nil {
		return err
	}
	defer nc.Close()
	return f(ctx, orchestrator.New(nc, orchestrator.WithLogger(a.Logger())))
}

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	fmt.Fprintln(a.Stdout, string(b))
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
