package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/gossrun"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/trust/policy"
)

// applyFlags are the flags of "apply".
type applyFlags struct {
	path     string
	noop     bool
	monitor  bool
	json     bool
	render   bool
	report   bool
	dataFile string
	// detailed is --detailed-exit-codes: exit 2 on a failed resource
	// and 5 under noop with changes, as ccm-orch; CCM's apply exits 0.
	detailed bool
	// hiera is CCM's --hiera: a hierarchical data file resolved with the
	// facts, its data over the manifest's (--data over both).
	hiera string
	// policy is the policy file whose keys a signed remote bundle must
	// be signed by.
	policy string
	// cacheDir keeps the newest signed bundle's time per source.
	cacheDir string
	facts    factFlags
	diff     diffFlags
	// conn is the NATS connection kvGet() reads buckets with, made at
	// its first call.
	conn *connflags.Flags
}

func (a *app) registerApply(cli *fisk.Application) {
	c := &applyFlags{}
	cmd := cli.Command("apply", "Apply a manifest (many resources, data and hierarchy) on this host")
	cmd.Arg("manifest", "Manifest file (YAML or JSON; relative sources resolve against its directory), or a bundle (gzipped tar with manifest.yaml): https://host/m.tar.gz#sha256=HEX, or obj://BUCKET/KEY or https:// signed by a --policy key").Required().StringVar(&c.path)
	cmd.Flag("cache-dir", "Where the time of the newest signed bundle taken from each source is kept (shared with ccm-agent agent's cache_dir): an older signed bundle is refused").Default(continuous.DefaultCacheDir).PlaceHolder("DIR").StringVar(&c.cacheDir)
	cmd.Flag("policy", "Policy file (YAML): the keys a remote bundle may be signed by, and what each may do (an unsigned https:// bundle must be pinned with #sha256=)").PlaceHolder("FILE").StringVar(&c.policy)
	cmd.Flag("noop", "Report what would change without changing anything").BoolVar(&c.noop)
	cmd.Flag("monitor-only", "Run only the resources' health checks: nothing is checked against its desired state or changed (with --detailed-exit-codes, exit 2 when a check is not OK)").UnNegatableBoolVar(&c.monitor)
	cmd.Flag("json", "Print every transaction event and the summary as JSON").BoolVar(&c.json)
	cmd.Flag("detailed-exit-codes", "Exit 2 when a resource failed and 5 under --noop when something would change, as ccm-orch does; without it the exit status is CCM's: 0 once the manifest ran, 1 when it could not run").UnNegatableBoolVar(&c.detailed)
	cmd.Flag("report", "Print CCM's run summary after the events: counts by outcome, unmet requirements, health checks by status, errors (--no-report to leave it out)").Default("true").BoolVar(&c.report)
	cmd.Flag("render", "Print the manifest after data resolution and template expansion, and apply nothing").BoolVar(&c.render)
	cmd.Flag("data", "YAML or JSON file of data merged (deep) over the manifest's resolved data").PlaceHolder("FILE").StringVar(&c.dataFile)
	cmd.Flag("hiera", "Hierarchical data file (data, hierarchy, overrides) resolved with the facts; its data overrides the manifest's, --data overrides both").Envar("CCM_HIERA_DATA").PlaceHolder("FILE").StringVar(&c.hiera)
	c.facts.register(cmd)
	c.diff.register(cmd)
	c.conn = connflags.Register(cmd)
	a.registerPackageLockTimeout(cmd)
	noRegistration := registerNoRegistration(cmd)
	// CCM's spellings: --facts FILE is --facts-file; --read-env (CCM's
	// default) has no counterpart, apply reads no ./.env.
	cmd.Flag("facts", "CCM's name for --facts-file").Hidden().PlaceHolder("FILE").ExistingFileVar(&c.facts.file)
	readEnv := cmd.Flag("read-env", "CCM's .env reading: refused here (--no-read-env is what apply does)").Hidden().Bool()
	cmd.Action(func(*fisk.ParseContext) error {
		if err := noRegistration(); err != nil {
			return err
		}
		if *readEnv {
			return program.Exit(protocol.ExitError, errors.New("--read-env: ccm-agent apply reads no ./.env (Environ is the process environment); export the variables, or use ccm-agent ensure, which reads ./.env"))
		}
		return a.apply(c)
	})
}

// apply loads, resolves and runs one manifest and prints the outcome.
func (a *app) apply(c *applyFlags) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	log := a.Logger()
	kv := &lazyKV{flags: c.conn, log: log}
	defer kv.Close()
	var m *manifest.Manifest
	var signer *policy.Signer
	if isRemoteRef(c.path) && !strings.HasPrefix(c.path, "file://") {
		var pol *policy.Policy
		if c.policy != "" {
			p, err := policy.LoadPolicy(c.policy)
			if err != nil {
				return a.applyError(c, err)
			}
			pol = p
		}
		b, cleanup, err := fetchBundle(ctx, c.path, pol, kv, c.cacheDir, a.warnLogger())
		if err != nil {
			return a.applyError(c, err)
		}
		defer cleanup()
		m, signer = b.m, b.signer
	} else {
		path := strings.TrimPrefix(c.path, "file://")
		var err error
		if m, err = manifest.Load(path); err != nil {
			return a.applyError(c, err)
		}
	}
	manifest.LogAnnotationWarnings(a.warnLogger(), m.AnnotationWarnings())
	fs, err := c.facts.gather(ctx)
	if err != nil {
		return err
	}
	data, err := readDataFile(c.dataFile)
	if err != nil {
		return a.applyError(c, err)
	}
	if c.hiera != "" {
		over, err := hieraData(c.hiera, fs, a.warnLogger())
		if err != nil {
			return a.applyError(c, err)
		}
		maps.Copy(over, data)
		data = over
	}
	opts := manifest.RunOptions{Noop: c.noop, MonitorOnly: c.monitor, Facts: fs, Data: data, AllowEnviron: true, AllowFiles: true, KV: kv, Log: log, DiffLimit: c.diff.maxBytes}
	if signer != nil {
		// A signed bundle runs as the continuous agent runs one: judged
		// resource by resource by its signer's scopes, seeing facts and
		// data only (no environment, files outside it, or buckets).
		if opts.Guard, err = signerGuard(signer, c.noop, fs); err != nil {
			return a.applyError(c, err)
		}
		opts.AllowEnviron, opts.AllowFiles, opts.KV = false, false, nil
	}

	if c.render {
		r, err := m.Resolve(opts)
		if err != nil {
			return a.applyError(c, err)
		}
		out, err := renderCCM(r)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		fmt.Fprint(a.Stdout, string(out))
		return nil
	}

	ex, unsupervise := superviseCommands(ctx, log, localInstance)
	defer unsupervise()
	reg, err := providers.Builtin(providers.Options{Runner: ex, Log: log, PackageLockTimeout: a.packageLockTimeout})
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if !c.json {
		opts.OnStart = func(pre string, resources int) {
			// as CCM: an empty line and the pre_message, then its
			// logger's line naming the manifest as given
			if pre != "" {
				fmt.Fprintf(a.Stdout, "\n%s\n", pre)
			}
			fmt.Fprintln(a.Stdout, ccmLine("INFO", fmt.Sprintf("Executing manifest manifest=%s resources=%d", c.path, resources)))
		}
		terminated := false
		opts.OnEvent = func(ev *protocol.TransactionEvent) {
			if !terminated && manifest.NotApplied(ev) {
				terminated = true
				fmt.Fprintln(a.Stdout, ccmLine("WARN", "Terminating manifest execution due to failed resource"))
			}
			fmt.Fprintln(a.Stdout, ccmEventLine(ev))
			c.diff.write(a.Stdout, ev)
			writeHealth(a.Stdout, ev)
		}
	}
	rep, err := manifest.Run(ctx, engine.New(reg, engine.WithLogger(log), engine.WithHealthRunner(providers.HealthRunner(ex)), engine.WithGossRunner(gossrun.New())), m, opts)
	if err != nil {
		return a.applyError(c, err)
	}
	if c.json {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		fmt.Fprintln(a.Stdout, string(b))
	} else {
		if rep.PostMessage != "" {
			fmt.Fprintln(a.Stdout, rep.PostMessage)
		}
		fmt.Fprintln(a.Stdout, summaryLine(rep.Summary, c.noop))
		if c.report {
			newRunReport(rep.Events, rep.Summary.Duration).write(a.Stdout)
		}
	}
	if !c.detailed {
		return nil
	}
	if code := protocol.EventsExitCode(c.noop, rep.Events...); code != protocol.ExitOK {
		return program.Exit(code, nil)
	}
	return nil
}

// applyError ends the command with exit 1: one line on stderr, or with
// --json an {"error": "..."} document on stdout.
func (a *app) applyError(c *applyFlags, err error) error {
	if c.json {
		b, _ := json.Marshal(map[string]string{"error": err.Error()})
		fmt.Fprintln(a.Stdout, string(b))
		return program.Exit(protocol.ExitError, nil)
	}
	return program.Exit(protocol.ExitError, err)
}

// readDataFile reads a YAML or JSON map for --data; "" is no data.
func readDataFile(path string) (map[string]any, error) {
	if path == "" {
		return nil, nil
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	var data map[string]any
	if _, err := protocol.DecodeStrict(body, &data, protocol.Limits{MaxBytes: manifest.DefaultMaxBytes}); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("--data %s: %s", path, pe.KeyMessage())
		}
		return nil, fmt.Errorf("--data %s: %w", path, err)
	}
	return data, nil
}

// summaryLine is the run's last line. Under noop nothing changed, so the
// counts say what would.
func summaryLine(s manifest.Summary, noop bool) string {
	changed, refreshed := "changed", "refreshed"
	if noop {
		changed, refreshed = "would change", "would refresh"
	}
	line := fmt.Sprintf("%d resources: %d stable, %d %s, %d failed, %d skipped, %d %s in %dms",
		s.Total, s.Stable, s.Changed, changed, s.Failed, s.Skipped, s.Refreshed, refreshed, s.Duration.Milliseconds())
	if s.NotApplied > 0 {
		line += fmt.Sprintf("; %d not applied", s.NotApplied)
	}
	return line
}
