package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/choria-io/fisk"
	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/protocol"
)

// yamlFlag adds --yaml beside a command's --json: the same document, in
// YAML.
func yamlFlag(cmd *fisk.CmdClause, yml *bool) {
	cmd.Flag("yaml", "Print the same document as --json, in YAML").UnNegatableBoolVar(yml)
}

// oneFormat refuses more than one output format: given maps each format
// flag's name ("--json") to whether it was given.
func oneFormat(given map[string]bool) error {
	var set []string
	for name, on := range given {
		if on {
			set = append(set, name)
		}
	}
	slices.Sort(set)
	if len(set) > 1 {
		return program.Exit(protocol.ExitError, fmt.Errorf("%s cannot be used together: choose one output format", strings.Join(set, " and ")))
	}
	return nil
}

// printDoc writes v as indented JSON, or with yml as the same document in
// YAML.
func (a *app) printDoc(v any, yml bool) error {
	if !yml {
		return a.printJSON(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	y, err := jsonToYAML(b)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	_, err = a.Stdout.Write(y)
	return err
}

// jsonToYAML writes the JSON document doc as YAML: members in the
// document's order, numbers as written, and every string a string (quoted
// where YAML would read it as something else: "yes", "1e3", "0644", a
// leading tab).
func jsonToYAML(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	n, err := yamlNode(dec)
	if err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("encode YAML: more than one JSON document")
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	return out.Bytes(), nil
}

// yamlNode reads the next JSON value of dec as a YAML node.
func yamlNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if t == '{' {
			n.Kind, n.Tag = yaml.MappingNode, "!!map"
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				key, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key.(string)})
			}
			child, err := yamlNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, child)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	default: // nil
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
}
