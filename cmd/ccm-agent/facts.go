package main

import (
	"github.com/ccm-fleet/ccm/cmd/internal/program"

	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/choria-io/fisk"
	"github.com/goccy/go-yaml"

	"github.com/ccm-fleet/ccm/facts"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// factFlags are the flags every command that gathers facts takes.
type factFlags struct {
	pairs    []string
	file     string
	identity string
}

func (f *factFlags) register(cmd *fisk.CmdClause) {
	cmd.Flag("fact", "Custom fact key=value, overriding gathered facts (repeatable)").PlaceHolder("K=V").StringsVar(&f.pairs)
	cmd.Flag("facts-file", "YAML or JSON file of custom facts").PlaceHolder("FILE").ExistingFileVar(&f.file)
	cmd.Flag("identity", "Identity of this host (default: hostname)").StringVar(&f.identity)
}

func (f *factFlags) gather(ctx context.Context) (map[string]any, error) {
	fs, err := facts.Gather(ctx, facts.Options{Identity: f.identity, File: f.file, Pairs: f.pairs})
	if err != nil {
		return nil, program.Exit(protocol.ExitError, err)
	}
	return fs, nil
}

func (a *app) registerFacts(cli *fisk.Application) {
	var (
		ff      factFlags
		path    string
		js, yml bool
	)
	cmd := cli.Command("facts", "Show the facts of this host as JSON (as CCM's facts), or one fact by dotted path (e.g. host.info.platformFamily)")
	cmd.Arg("query", "Dotted path of one fact (array elements by index: cpu.info.0.modelName); printed as JSON").StringVar(&path)
	cmd.Flag("yaml", "Print YAML instead of JSON").UnNegatableBoolVar(&yml)
	cmd.Flag("json", "Print JSON (the default)").Hidden().UnNegatableBoolVar(&js)
	ff.register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		if js && yml {
			return program.Exit(protocol.ExitError, fmt.Errorf("--json and --yaml cannot be used together"))
		}
		all, err := ff.gather(context.Background())
		if err != nil {
			return err
		}
		var out any = all
		if path != "" {
			v, ok := templates.Walk(all, path)
			if !ok {
				return program.Exit(protocol.ExitError, fmt.Errorf("no fact at %q", path))
			}
			out = v
		}
		b, err := json.Marshal(out)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		if yml {
			// CCM converts its JSON with go-yaml's JSONToYAML and
			// prints it with a newline of its own: an empty line ends
			// the document.
			y, err := yaml.JSONToYAML(b)
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			fmt.Fprintln(a.Stdout, string(y))
			return nil
		}
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "  "); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		fmt.Fprintln(a.Stdout, ind.String())
		return nil
	})
}
