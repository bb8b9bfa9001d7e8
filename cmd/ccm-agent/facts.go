package main

import (
	"github.com/ccm-fleet/ccm/cmd/internal/program"

	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/choria-io/fisk"
	"gopkg.in/yaml.v3"

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
		ff   factFlags
		path string
		js   bool
	)
	cmd := cli.Command("facts", "Show the facts of this host, or one fact by dotted path (e.g. host.info.platformFamily)")
	cmd.Arg("path", "Dotted path of one fact").StringVar(&path)
	cmd.Flag("json", "Print JSON").BoolVar(&js)
	ff.register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
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
		if js {
			b, _ := json.MarshalIndent(out, "", "  ")
			fmt.Fprintln(a.Stdout, string(b))
			return nil
		}
		if m, ok := out.(map[string]any); ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			sorted := &yaml.Node{Kind: yaml.MappingNode}
			for _, k := range keys {
				var vn yaml.Node
				_ = vn.Encode(m[k])
				sorted.Content = append(sorted.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &vn)
			}
			b, _ := yaml.Marshal(sorted)
			fmt.Fprint(a.Stdout, string(b))
			return nil
		}
		fmt.Fprintln(a.Stdout, out)
		return nil
	})
}
