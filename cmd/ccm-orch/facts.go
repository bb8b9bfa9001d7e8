package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// FactDistribution is what "ccm-orch facts KEY --json" prints: how the
// values of one fact spread across the hosts discovered.
type FactDistribution struct {
	// Fact is the fact's name, a dotted path into nested facts allowed.
	Fact string `json:"fact"`
	// Hosts counts the hosts discovered.
	Hosts int `json:"hosts"`
	// Values are the values found with how many hosts have each, the most
	// common first, then by value.
	Values []FactValue `json:"values"`
	// Missing counts the hosts discovery found without the fact.
	Missing int `json:"missing"`
}

// FactValue is one value of a fact and how many hosts have it.
type FactValue struct {
	// Value is the value as text: a string as is, a number or a boolean
	// as JSON writes it, a list or a map as JSON.
	Value string `json:"value"`
	// Count counts the hosts with this value.
	Count int `json:"count"`
	// Hosts are the hosts with this value, sorted.
	Hosts []string `json:"hosts"`
}

// factText renders a fact's value for a table or a distribution: "" when
// the host has no such fact (or it is null or empty).
func factText(facts map[string]any, key string) string {
	v, ok := protocol.LookupFact(facts, key)
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// distribution counts the values of key across nodes.
func distribution(key string, nodes []orchestrator.Node) FactDistribution {
	d := FactDistribution{Fact: key, Hosts: len(nodes), Values: []FactValue{}}
	byValue := map[string][]string{}
	for _, n := range nodes {
		v := factText(n.Facts, key)
		if v == "" {
			d.Missing++
			continue
		}
		byValue[v] = append(byValue[v], n.Identity)
	}
	for v, hosts := range byValue {
		slices.Sort(hosts)
		d.Values = append(d.Values, FactValue{Value: v, Count: len(hosts), Hosts: hosts})
	}
	slices.SortFunc(d.Values, func(a, b FactValue) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Value, b.Value))
	})
	return d
}

func (a *app) registerFacts(cli *fisk.Application) {
	var (
		key     string
		sel     selection
		js, yml bool
	)
	cmd := cli.Command("facts", "Count the values of one fact across the hosts a filter selects, the most common first")
	cmd.Arg("fact", "The fact's name; a dotted path reaches into nested facts (host.info.platformFamily)").Required().StringVar(&key)
	sel.register(cmd)
	cmd.Flag("json", "Print the distribution as JSON, with the hosts of each value").BoolVar(&js)
	yamlFlag(cmd, &yml)
	sel.conn = connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		if err := oneFormat(map[string]bool{"--json": js, "--yaml": yml}); err != nil {
			return err
		}
		if err := protocol.CheckFactKey(key); err != nil {
			return program.Exit(protocol.ExitError, protocol.Plain(err))
		}
		nodes, err := a.discoverSelected(&sel, []string{key})
		if err != nil {
			return err
		}
		if len(nodes) == 0 {
			return program.Exit(protocol.ExitNoMatch, errNoMatch)
		}
		d := distribution(key, nodes)
		if js || yml {
			return a.printDoc(d, yml)
		}
		tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "VALUE\tCOUNT")
		for _, v := range d.Values {
			fmt.Fprintf(tw, "%s\t%d\n", v.Value, v.Count)
		}
		if d.Missing > 0 {
			fmt.Fprintf(tw, "(no value)\t%d\n", d.Missing)
		}
		_ = tw.Flush()
		fmt.Fprintf(a.Stdout, "%s: %d %s of %s\n", key, len(d.Values), plural(len(d.Values), "value", "values"), countHosts(d.Hosts))
		return nil
	})
}
