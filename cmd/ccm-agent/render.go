package main

import (
	"fmt"
	"sort"

	"github.com/goccy/go-yaml"

	"github.com/ccm-fleet/ccm/manifest"
)

// renderCCM prints a resolved manifest in the shape of CCM's "apply
// --render": ccm (fail_on_error, the messages, resources as a list of
// {TYPE: properties}) then data, in go-yaml's layout (2 spaces, sequences
// level with their key) and with CCM's empty line at the end. Properties
// start with name and ensure, as CCM's do, the rest sorted; templates are
// expanded (CCM prints them as written).
func renderCCM(r *manifest.Resolved) ([]byte, error) {
	ccm := yaml.MapSlice{{Key: "fail_on_error", Value: r.FailOnError}}
	if r.PreMessage != "" {
		ccm = append(ccm, yaml.MapItem{Key: "pre_message", Value: r.PreMessage})
	}
	if r.PostMessage != "" {
		ccm = append(ccm, yaml.MapItem{Key: "post_message", Value: r.PostMessage})
	}
	resources := make([]yaml.MapSlice, 0, len(r.Resources))
	for _, s := range r.Resources {
		resources = append(resources, yaml.MapSlice{{Key: s.Type, Value: ccmOrder(wholeNumbers(s.Properties).(map[string]any))}})
	}
	ccm = append(ccm, yaml.MapItem{Key: "resources", Value: resources})
	var data any = map[string]any{}
	if r.Data != nil {
		data = r.Data
	}
	doc := yaml.MapSlice{{Key: "ccm", Value: ccm}, {Key: "data", Value: wholeNumbers(data)}}
	b, err := yaml.MarshalWithOptions(doc, yaml.Indent(2), yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return append(b, '\n'), nil
}

// ccmOrder orders properties name, ensure, then the others sorted.
func ccmOrder(props map[string]any) yaml.MapSlice {
	out := yaml.MapSlice{}
	for _, k := range []string{"name", "ensure"} {
		if v, ok := props[k]; ok {
			out = append(out, yaml.MapItem{Key: k, Value: v})
		}
	}
	rest := make([]string, 0, len(props))
	for k := range props {
		if k != "name" && k != "ensure" {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, yaml.MapItem{Key: k, Value: props[k]})
	}
	return out
}

