package main

import (
	"github.com/ccm-fleet/ccm/cmd/internal/diffview"
	"github.com/ccm-fleet/ccm/cmd/internal/program"

	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// runFlags are the flags of every command that sends a fleet request:
// host selection, noop, deadlines, batching, output and connection.
type runFlags struct {
	noop      bool
	timeout   time.Duration
	discovery discoveryFlags
	ttl       time.Duration
	batch     string
	sleep     time.Duration
	maxFail   int
	json      bool
	jsonl     bool
	yaml      bool
	async     bool
	// noProgress turns the terminal's progress line off
	noProgress bool
	// diff prints the diffs, hosts grouped by identical diff
	diff bool
	// noColor turns colour off in diffs
	noColor bool
	key     string
	filter  filterFlags
	target  targetFlags
	conn    *connflags.Flags
}

// runFlagOptions say which of the run flags a command takes.
type runFlagOptions struct {
	// noop adds --noop (audit is always a dry run and has none).
	noop bool
	// execTimeout says the command has an exec --timeout of its own (the
	// command's); the others refuse --timeout with a pointer to
	// --reply-timeout, so the flag has one meaning everywhere.
	execTimeout bool
}

func (c *runFlags) register(cmd *fisk.CmdClause, o runFlagOptions) {
	c.filter.register(cmd)
	c.target.register(cmd)
	if o.noop {
		cmd.Flag("noop", "Report what would change without changing anything (exit 5 on drift)").BoolVar(&c.noop)
	}
	if !o.execTimeout {
		refuseFlag(cmd, "timeout", "--timeout is only an exec command's own timeout; how long hosts have to reply is --reply-timeout")
	}
	program.DurationVar(cmd.Flag("reply-timeout", "How long each host has to reply once asked (default 10s; 5m for a package, or a manifest holding one)").PlaceHolder("DURATION"), &c.timeout)
	c.discovery.register(cmd)
	program.DurationVar(cmd.Flag("ttl", "How long after sending hosts may still start the request").Default("1m"), &c.ttl)
	cmd.Flag("batch", "Ask at most N hosts (or N% of them) at a time, the next as soon as one finishes").PlaceHolder("N|N%").StringVar(&c.batch)
	program.DurationVar(cmd.Flag("batch-sleep", "With --batch, pause this long before asking the next host").PlaceHolder("DURATION"), &c.sleep)
	cmd.Flag("max-failures", "With --batch, stop asking new hosts once this many failed or did not reply (0: no limit)").PlaceHolder("N").IntVar(&c.maxFail)
	cmd.Flag("json", "Print the result as one JSON document").BoolVar(&c.json)
	cmd.Flag("jsonl", "Print each host's reply as a JSON line as it arrives, then the result").BoolVar(&c.jsonl)
	yamlFlag(cmd, &c.yaml)
	cmd.Flag("async", "Send the request, print its id and exit; the replies land in history (ccm-orch history show ID)").BoolVar(&c.async)
	cmd.Flag("diff", "Also print what differs (content diffs, attribute and version changes), hosts with identical diffs sharing one block; --json always carries the diffs").UnNegatableBoolVar(&c.diff)
	cmd.Flag("no-color", "Do not colour added and removed lines of diffs (also when NO_COLOR is set, or output is not a terminal)").UnNegatableBoolVar(&c.noColor)
	cmd.Flag("no-progress", "Do not show the progress line (replied/expected, outcomes so far, elapsed) on a terminal's stderr").UnNegatableBoolVar(&c.noProgress)
	cmd.Flag("key", "Sign every request with this nkeys seed file (ccm-orch keys new); without one requests go unsigned and only insecure agents run them").Envar("CCM_KEY").PlaceHolder("FILE").StringVar(&c.key)
	c.conn = connflags.Register(cmd)
}

// request builds the orchestrator request without its body; every error is
// a usage error.
func (c *runFlags) request() (orchestrator.Request, error) {
	req := orchestrator.Request{
		Noop: c.noop, TTL: c.ttl, Timeout: c.timeout,
		DiscoveryTimeout: c.discovery.timeout, DiscoveryQuiet: c.discovery.quiet,
		Discovery:  orchestrator.DiscoveryMode(c.discovery.mode),
		BatchSleep: c.sleep, MaxFailures: c.maxFail, Async: c.async, Sender: sender(),
	}
	if err := oneFormat(map[string]bool{"--json": c.json, "--jsonl": c.jsonl, "--yaml": c.yaml}); err != nil {
		return req, err
	}
	switch {
	case c.async && c.jsonl:
		return req, errors.New("--async and --jsonl cannot be used together: nothing is collected")
	case c.async && c.batch != "":
		return req, errors.New("--async and --batch cannot be used together: batches wait for replies")
	}
	var err error
	if req.Filter, err = c.filter.filter(); err != nil {
		return req, err
	}
	if req.Narrow, err = c.target.narrowing(); err != nil {
		return req, err
	}
	if req.Batch, req.BatchPercent, err = parseBatch(c.batch); err != nil {
		return req, err
	}
	return req, nil
}

// ensureFlags are the flags every "ensure <type>" takes besides the type's own.
type ensureFlags struct {
	runFlags
	common resflags.Common
}

func (c *ensureFlags) register(cmd *fisk.CmdClause, t resflags.TypeFlags) {
	c.common.Register(cmd, t)
	c.runFlags.register(cmd, runFlagOptions{noop: true, execTimeout: t.Has("timeout")})
}

// request builds the orchestrator request; every error is a usage error.
func (c *ensureFlags) request(typeName string, props map[string]any) (orchestrator.Request, error) {
	req, err := c.runFlags.request()
	if err != nil {
		return req, err
	}
	if props, err = c.common.Properties(props); err != nil {
		return req, err
	}
	if req.Ensure, err = protocol.NewEnsureRequest(typeName, props); err != nil {
		return req, err
	}
	// Refuse what every agent would refuse before connecting, so a typo
	// sends nothing and records nothing.
	if err := orchestrator.CheckEnsure(req.Ensure); err != nil {
		return req, err
	}
	return req, nil
}

// refuseFlag adds a hidden flag that fails the command line with why: a
// spelling that would mean something else here than elsewhere.
func refuseFlag(cmd *fisk.CmdClause, name, why string) {
	var ignored string
	cmd.Flag(name, why).Hidden().PreAction(func(*fisk.ParseContext) error {
		return errors.New(why)
	}).StringVar(&ignored)
}

// parseBatch reads --batch: "" (no batching), "N" or "N%".
func parseBatch(s string) (size, percent int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	num, pct := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(num)
	switch {
	case err != nil || n < 1:
		return 0, 0, fmt.Errorf("--batch %q: use a whole number of hosts such as 10, or a percentage such as 25%%", s)
	case pct && n > 100:
		return 0, 0, fmt.Errorf("--batch %q: a percentage is at most 100%%", s)
	case pct:
		return 0, n, nil
	default:
		return n, 0, nil
	}
}

func (a *app) registerEnsure(cli *fisk.Application) {
	ens := cli.Command("ensure", "Bring one resource to its desired state on every selected host")
	for _, t := range resflags.Table {
		cmd := ens.Command(t.Type, t.Help)
		c := &ensureFlags{}
		c.register(cmd, t)
		vals := resflags.Register(cmd, t)
		typeName := t.Type
		cmd.Action(func(*fisk.ParseContext) error {
			props, err := vals.Properties()
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			req, err := c.request(typeName, props)
			if err != nil {
				return usageError(err)
			}
			return a.send(&c.runFlags, req, renderResult)
		})
	}
	a.registerEnsureRequest(ens)
}

// usageError makes err exit 1 unless it already carries an exit code.
func usageError(err error) error {
	var ee *program.ExitError
	if errors.As(err, &ee) {
		return err
	}
	return program.Exit(protocol.ExitError, err)
}

// send runs the request and renders the result with render (or as JSON).
func (a *app) send(c *runFlags, req orchestrator.Request, render func(io.Writer, *orchestrator.Result, bool)) error {
	clientOpts := []orchestrator.Option{orchestrator.WithLogger(a.Logger())}
	if c.key == "" {
		fmt.Fprintln(a.Stderr, "ccm-orch: no --key: the request goes unsigned and only agents with insecure: true run it")
	} else {
		kp, err := loadSeed(c.key)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		clientOpts = append(clientOpts, orchestrator.WithKey(kp))
	}
	ctx, stop := a.signalContext()
	defer stop()
	nc, err := a.connect(ctx, c.conn)
	if err != nil {
		return err
	}
	defer nc.Close()
	client := orchestrator.New(nc, clientOpts...)
	if err := c.target.resolve(ctx, client, req.Narrow); err != nil {
		return program.Exit(protocol.ExitError, err)
	}

	var progress *progress
	if !c.noProgress && !c.jsonl && !c.async {
		progress = newProgress(a.Stderr, req.Noop)
	}
	if progress != nil {
		req.Progress = progress.update
		req.OnReply = progress.reply
	}
	if c.jsonl {
		req.OnReply = func(h orchestrator.HostResult) { _ = writeLine(a.Stdout, lineHostResult, h) }
	}
	res, runErr := client.Run(ctx, req)
	progress.clear()
	if res != nil {
		renderNotices(a.Stderr, res)
		renderSample(a.Stderr, res.Sample)
		switch {
		case c.json || c.yaml:
			if err := a.printDoc(res, c.yaml); err != nil {
				return err
			}
		case c.jsonl:
			_ = writeLine(a.Stdout, lineResult, res)
		case c.async:
			if len(res.Expected) > 0 {
				fmt.Fprintln(a.Stdout, res.RequestID)
			}
		default:
			out := wrapWidth(a.Stdout, terminalWidth(a.Stdout))
			render(out, res, a.Verbose)
			_ = out.Flush()
			if c.diff {
				renderDiffGroups(a.Stdout, orchestrator.DiffGroups(res), diffview.Colour(a.Stdout, c.noColor))
			}
		}
	}
	switch {
	case errors.Is(runErr, orchestrator.ErrInterrupted) && res != nil:
		renderInterrupted(a.Stderr, res)
		return program.Exit(protocol.ExitInterrupted, nil)
	case runErr != nil && ctx.Err() != nil:
		return program.Exit(protocol.ExitInterrupted, fmt.Errorf("interrupted before the request was sent: no host was asked (%w)", runErr))
	case runErr != nil:
		return program.Exit(protocol.ExitError, runErr)
	case res.ExitCode == protocol.ExitNoMatch:
		return program.Exit(protocol.ExitNoMatch, errNoMatch)
	case res.ExitCode != protocol.ExitOK:
		return program.Exit(res.ExitCode, nil)
	}
	return nil
}
