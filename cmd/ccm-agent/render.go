package main

import (
	"fmt"
	"sort"
	"time"

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

// ccmResponseYAML turns a JSON document (an ensure response) into YAML as
// CCM's "ensure api pipe --yaml" writes it: the JSON's field order, two
// spaces, every "duration" as Go prints a time.Duration (362.338µs, where
// JSON has nanoseconds), times unquoted, and an empty line at the end.
func ccmResponseYAML(js []byte) ([]byte, error) {
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(js, &doc, yaml.UseOrderedMap()); err != nil {
		return nil, err
	}
	b, err := yaml.MarshalWithOptions(durationText(doc), yaml.Indent(2), yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// durationText replaces the whole-number value of every "duration" key
// in v by its time.Duration text, and the RFC 3339 text of every
// "timestamp" and "mtime" by the time, which the encoder writes unquoted
// as CCM's does.
func durationText(v any) any {
	switch t := v.(type) {
	case yaml.MapSlice:
		for i, it := range t {
			if it.Key == "timestamp" || it.Key == "mtime" {
				// a time.Time in CCM's document: unquoted
				if str, ok := it.Value.(string); ok {
					if ts, err := time.Parse(time.RFC3339Nano, str); err == nil && ts.Format(time.RFC3339Nano) == str {
						t[i].Value = ts
						continue
					}
				}
			}
			if it.Key == "duration" {
				switch n := it.Value.(type) {
				case uint64:
					t[i].Value = time.Duration(n).String()
					continue
				case int64:
					t[i].Value = time.Duration(n).String()
					continue
				}
			}
			t[i].Value = durationText(it.Value)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = durationText(e)
		}
		return t
	}
	return v
}
