package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/choria-io/fisk"
	goyaml "github.com/goccy/go-yaml"

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
// YAML (members in the JSON document's order).
func (a *app) printDoc(v any, yml bool) error {
	if !yml {
		return a.printJSON(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	y, err := goyaml.JSONToYAML(b)
	if err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("encode YAML: %w", err))
	}
	_, err = a.Stdout.Write(y)
	return err
}
