package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/sources"
)

// assignFlags are the arguments and flags of assign.
type assignFlags struct {
	name, path, data, key string
	bundle                string
	filter                filterFlags
	interval, splay       time.Duration
	noop                  bool
	conn                  *connflags.Flags
}

func (a *app) registerAssign(cli *fisk.Application) {
	c := &assignFlags{}
	cmd := cli.Command("assign", "Store a signed assignment: the selected hosts' agents apply the manifest on their own, at once and then every interval (with --noop: audit it)")
	cmd.Arg("name", "The assignment's name (letters, digits, '_' and '-'); assigning an existing name makes a new revision").Required().StringVar(&c.name)
	cmd.Arg("manifest", "The manifest file (YAML or JSON); files its relative sources name are stored with it (or --bundle)").ExistingFileVar(&c.path)
	cmd.Flag("bundle", "Instead of a manifest file, a signed bundle in an object store (ccm-orch manifest put): agents fetch it, check that it is the bundle assigned and that its signer is trusted, and apply it").PlaceHolder("obj://BUCKET/KEY").StringVar(&c.bundle)
	c.filter.register(cmd)
	program.DurationVar(cmd.Flag("interval", "How often each selected agent applies it again").Default(protocol.DefaultAssignmentInterval.String()), &c.interval)
	program.DurationVar(cmd.Flag("splay", "Spread the hosts' runs over up to this long after each interval (each host keeps its own offset)").Default("0s"), &c.splay)
	cmd.Flag("noop", "A scheduled audit: report drift, change nothing").BoolVar(&c.noop)
	cmd.Flag("data", "A YAML or JSON file of data merged over the manifest's data (its top-level keys win)").PlaceHolder("FILE").StringVar(&c.data)
	cmd.Flag("key", "Sign the assignment with this nkeys seed file; agents apply it only when their policy lets this key").Envar("CCM_KEY").PlaceHolder("FILE").Required().StringVar(&c.key)
	c.conn = connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error { return a.assign(c) })

	as := cli.Command("assignments", "List, show and remove the assignments agents apply on their own")
	var listJSON, listYAML bool
	list := as.Command("list", "List the assignments: name, revision, selector, schedule, mode and signer")
	list.Flag("json", "Print the list as JSON").BoolVar(&listJSON)
	yamlFlag(list, &listYAML)
	listConn := connflags.Register(list)
	list.Action(func(*fisk.ParseContext) error {
		if err := oneFormat(map[string]bool{"--json": listJSON, "--yaml": listYAML}); err != nil {
			return err
		}
		return a.withClient(listConn, func(ctx context.Context, cl *orchestrator.Client) error {
			entries, err := cl.Assignments(ctx)
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			if listJSON || listYAML {
				return a.printDoc(entries, listYAML)
			}
			if len(entries) == 0 {
				fmt.Fprintln(a.Stdout, "no assignments")
				return nil
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tREVISION\tSELECTOR\tINTERVAL\tSPLAY\tMODE\tMANIFEST\tSIGNER")
			for _, e := range entries {
				if r := e.Removed; r != nil {
					fmt.Fprintf(tw, "%s\t%d\t(removed %s)\t\t\t\t\t%s\n", e.Name, e.Revision, r.Created.Local().Format(historyTimeFormat), shortKey(e.Signer))
					continue
				}
				if e.Assignment == nil {
					fmt.Fprintf(tw, "%s\t%d\t(unreadable: %s)\t\t\t\t\t%s\n", e.Name, e.Revision, e.Problem, shortKey(e.Signer))
					continue
				}
				as := e.Assignment
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, e.Revision, selectorString(as), as.Interval, as.Splay, modeString(as.Noop), orDash(as.ManifestName), shortKey(e.Signer))
			}
			return tw.Flush()
		})
	})

	var (
		showName    string
		showRev     uint64
		showJSON    bool
		showYAML    bool
		showHistory bool
	)
	show := as.Command("show", "Show one assignment: its selector, schedule, signer and manifest (an older revision with --revision)")
	show.Arg("name", "The assignment's name").Required().StringVar(&showName)
	show.Flag("revision", "Show this revision rather than the current one").PlaceHolder("N").Uint64Var(&showRev)
	show.Flag("history", "List the revisions the store keeps").UnNegatableBoolVar(&showHistory)
	show.Flag("json", "Print it as JSON").BoolVar(&showJSON)
	yamlFlag(show, &showYAML)
	showConn := connflags.Register(show)
	show.Action(func(*fisk.ParseContext) error {
		if err := oneFormat(map[string]bool{"--json": showJSON, "--yaml": showYAML}); err != nil {
			return err
		}
		return a.withClient(showConn, func(ctx context.Context, cl *orchestrator.Client) error {
			if showHistory {
				if showRev != 0 {
					return program.Exit(protocol.ExitError, errors.New("--history and --revision cannot be used together"))
				}
				hist, err := cl.AssignmentHistory(ctx, showName)
				if err != nil {
					return program.Exit(protocol.ExitError, err)
				}
				if showJSON || showYAML {
					return a.printDoc(hist, showYAML)
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "REVISION\tSTORED\tSELECTOR\tINTERVAL\tMODE\tSIGNER")
				for _, e := range hist {
					if e.Removed != nil {
						fmt.Fprintf(tw, "%d\t%s\t(removed)\t\t\t%s\n", e.Revision, e.Stored.Local().Format(historyTimeFormat), shortKey(e.Signer))
						continue
					}
					if e.Assignment == nil {
						fmt.Fprintf(tw, "%d\t%s\t(%s)\t\t\t\n", e.Revision, e.Stored.Local().Format(historyTimeFormat), e.Problem)
						continue
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Revision, e.Stored.Local().Format(historyTimeFormat), selectorString(e.Assignment), e.Assignment.Interval, modeString(e.Assignment.Noop), shortKey(e.Signer))
				}
				return tw.Flush()
			}
			e, err := cl.Assignment(ctx, showName, showRev)
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			if showJSON || showYAML {
				return a.printDoc(e, showYAML)
			}
			a.printAssignment(e)
			return nil
		})
	})

	var rmName, rmKey string
	rm := as.Command("rm", "Remove an assignment with a signed removal: agents stop applying it when the key stored it or is an assignments administrator (what it made stays; its revisions stay in the store's history)")
	rm.Arg("name", "The assignment's name").Required().StringVar(&rmName)
	rm.Flag("key", "Sign the removal with this nkeys seed file (required: agents ignore unsigned removals)").Envar("CCM_KEY").PlaceHolder("FILE").StringVar(&rmKey)
	rmConn := connflags.Register(rm)
	rm.Action(func(*fisk.ParseContext) error {
		if err := protocol.ValidateAssignmentName(rmName); err != nil {
			return program.Exit(protocol.ExitError, protocol.Plain(err))
		}
		if rmKey == "" {
			return program.Exit(protocol.ExitError, fmt.Errorf("assignments rm %s: --key FILE (or CCM_KEY) is required: agents remove an assignment only on a removal signed by the key that stored it or an assignments administrator, and ignore a bare delete", rmName))
		}
		kp, err := loadSeed(rmKey)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		return a.withClient(rmConn, func(ctx context.Context, cl *orchestrator.Client) error {
			rev, err := cl.RemoveAssignment(ctx, rmName, sender(), kp)
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			fmt.Fprintf(a.Stdout, "assignment %s removed (revision %d, a signed removal)\n", rmName, rev)
			return nil
		})
	})
}

// assign builds, checks, signs and stores an assignment and prints its
// revision. Everything is checked before connecting: a typo stores nothing.
func (a *app) assign(c *assignFlags) error {
	if err := protocol.ValidateAssignmentName(c.name); err != nil {
		return program.Exit(protocol.ExitError, protocol.Plain(err))
	}
	flt, err := c.filter.filter()
	if err != nil {
		return err
	}
	kp, err := loadSeed(c.key)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	switch {
	case c.bundle != "" && (c.path != "" || c.data != ""):
		return program.Exit(protocol.ExitError, errors.New("assign: --bundle names the manifest: give no manifest file and no --data"))
	case c.bundle != "":
		return a.assignBundle(c, flt, kp)
	case c.path == "":
		return program.Exit(protocol.ExitError, errors.New("assign: a manifest file (or --bundle obj://bucket/key) is required"))
	}
	m, err := manifest.Load(c.path)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if c.data != "" {
		if m, err = withData(m, c.data); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
	}
	if err := orchestrator.CheckManifest(m); err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("%s: %w", c.path, err))
	}
	bundle, err := manifest.NewBundle(m)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	raw, err := json.Marshal(bundle)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	as := &protocol.Assignment{
		Protocol: protocol.AssignmentProtocol, Name: c.name, Author: sender(), Noop: c.noop,
		Filter: flt, Interval: protocol.Duration(c.interval), Splay: protocol.Duration(c.splay),
		ManifestName: c.path, Manifest: raw,
	}
	pub, _ := kp.PublicKey()
	as.Sender = pub
	as.Created = time.Now().UTC()
	if err := as.Validate(); err != nil {
		return program.Exit(protocol.ExitError, protocol.Plain(err))
	}
	return a.withClient(c.conn, func(ctx context.Context, cl *orchestrator.Client) error {
		return a.storeAssignment(ctx, cl, c, as, kp)
	})
}

// storeAssignment stores as signed and prints its revision.
func (a *app) storeAssignment(ctx context.Context, cl *orchestrator.Client, c *assignFlags, as *protocol.Assignment, kp nkeys.KeyPair) error {
	rev, err := cl.Assign(ctx, as, kp)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	fmt.Fprintf(a.Stdout, "assignment %s revision %d: %s, every %s%s, %s\n", c.name, rev, selectorString(as), as.Interval, splayText(as.Splay), modeString(as.Noop))
	return nil
}

// assignBundle stores an assignment naming an object store bundle, pinned
// to the SHA-256 of the bundle stored now: agents refuse a bundle replaced
// since. Whether its signature verifies and its signer may run it is the
// agents' to judge (with their policy), as for any bundle.
func (a *app) assignBundle(c *assignFlags, flt *protocol.Filter, kp nkeys.KeyPair) error {
	src, err := sources.Parse(c.bundle)
	if err == nil && src.Kind != sources.KindObject {
		err = fmt.Errorf("%s is not obj://bucket/key", src)
	}
	if err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("assign --bundle: %w", err))
	}
	pub, _ := kp.PublicKey()
	as := &protocol.Assignment{
		Protocol: protocol.AssignmentProtocol, Name: c.name, Author: sender(), Noop: c.noop,
		Filter: flt, Interval: protocol.Duration(c.interval), Splay: protocol.Duration(c.splay),
		ManifestName: src.String(), Sender: pub, Created: time.Now().UTC(),
		Bundle: &protocol.AssignmentBundle{URL: src.String()},
	}
	ctx, cancel := a.signalContext()
	defer cancel()
	nc, err := a.connect(ctx, c.conn)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	f, err := (&sources.Fetcher{JS: js}).Fetch(ctx, src)
	if err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("assign --bundle: %w", err))
	}
	as.Bundle.SHA256 = f.SHA256
	if err := as.Validate(); err != nil {
		return program.Exit(protocol.ExitError, protocol.Plain(err))
	}
	if f.Signature == nil {
		fmt.Fprintf(a.Stderr, "warning: bundle %s is not signed (%s): agents will refuse it\n", src, f.SignatureErr)
	} else if err := f.Signature.Verify(f.Data, src.Location()); err != nil {
		fmt.Fprintf(a.Stderr, "warning: bundle %s: %s: agents will refuse it\n", src, err)
	}
	return a.storeAssignment(ctx, orchestrator.New(nc, orchestrator.WithLogger(a.Logger())), c, as, kp)
}

// withData returns m with the data of file merged over its own (top-level
// keys of file win), parsed again.
func withData(m *manifest.Manifest, file string) (*manifest.Manifest, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	var extra map[string]any
	if _, err := protocol.DecodeStrict(raw, &extra, protocol.Limits{MaxBytes: manifest.DefaultMaxBytes}); err != nil {
		return nil, fmt.Errorf("--data %s: %s", file, protocol.AsError(err).Message)
	}
	var doc map[string]any
	if err := json.Unmarshal(m.Document(), &doc); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	data, _ := doc["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	maps.Copy(data, extra)
	doc["data"] = data
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return manifest.Parse(b, manifest.ParseOptions{WorkingDir: m.WorkingDir()})
}

func (a *app) printAssignment(e orchestrator.AssignmentEntry) {
	w := a.Stdout
	fmt.Fprintf(w, "assignment %s, revision %d, stored %s\n", e.Name, e.Revision, e.Stored.Local().Format(historyTimeFormat))
	if r := e.Removed; r != nil {
		fmt.Fprintf(w, "  removed:  %s by %s (%s), a signed removal: agents stop running it\n", r.Created.Local().Format(historyTimeFormat), e.Signer, orDash(r.Author))
		return
	}
	if e.Assignment == nil {
		fmt.Fprintf(w, "  unreadable: %s\n", e.Problem)
		return
	}
	as := e.Assignment
	fmt.Fprintf(w, "  selector: %s\n  schedule: every %s%s\n  mode:     %s\n  signer:   %s (%s)\n  manifest: %s\n",
		selectorString(as), as.Interval, splayText(as.Splay), modeString(as.Noop), e.Signer, orDash(as.Author), orDash(as.ManifestName))
	if as.Bundle != nil {
		fmt.Fprintf(w, "  bundle:   %s (sha256 %s), fetched by the agents\n", as.Bundle.URL, as.Bundle.SHA256)
		return
	}
	var b manifest.Bundle
	if err := json.Unmarshal(as.Manifest, &b); err == nil {
		if m, err := manifest.Parse(b.Manifest, manifest.ParseOptions{}); err == nil {
			for _, d := range m.Declared() {
				fmt.Fprintf(w, "    %s#%s\n", d.Type, d.Name)
			}
		}
		if len(b.Files) > 0 {
			fmt.Fprintf(w, "  files:    %d bundled\n", len(b.Files))
		}
	}
}

// selectorString renders an assignment's selector: its filter and hosts,
// or "every host".
func selectorString(as *protocol.Assignment) string {
	parts := []string{}
	if f := orchestrator.FilterString(as.Filter); f != "" && f != "-" {
		parts = append(parts, f)
	}
	if len(as.Targets) > 0 {
		parts = append(parts, "hosts "+strings.Join(as.Targets, ","))
	}
	if len(parts) == 0 {
		return "every host"
	}
	return strings.Join(parts, " ")
}

func modeString(noop bool) string {
	if noop {
		return "audit (noop)"
	}
	return "apply"
}

func splayText(d protocol.Duration) string {
	if d == 0 {
		return ""
	}
	return " (splay " + d.String() + ")"
}

// shortKey abbreviates a public key for tables.
func shortKey(k string) string {
	if len(k) > 12 {
		return k[:12] + "…"
	}
	return orDash(k)
}
