// Command record runs the conformance table through a CCM binary and writes
// what it observed, with where it came from, to the table's recording
// (testdata/ccm.json). It is run by hand, against CCM built from its public
// source; the table's spec only reads the recording:
//
//	go run ./integration/conformance/record --ccm /path/to/ccm --commit bd56277
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/integration/conformance"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("ccm", "", "the CCM binary (built from github.com/choria-io/ccm)")
	commit := flag.String("commit", "", "the CCM commit it was built from")
	table := flag.String("table", "integration/conformance/testdata/cases.yaml", "the table")
	out := flag.String("out", "integration/conformance/testdata/ccm.json", "the recording to write")
	only := flag.String("case", "", "record only this case, keeping the others' recordings")
	flag.Parse()
	if *bin == "" || *commit == "" {
		return fmt.Errorf("--ccm and --commit are required (see --help)")
	}
	cases, err := conformance.Load(*table)
	if err != nil {
		return err
	}
	version, err := exec.Command(*bin, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %w", *bin, err)
	}
	rec := conformance.Recording{Cases: map[string][]conformance.Observation{}}
	if *only != "" {
		if old, err := conformance.LoadRecording(*out); err == nil {
			rec = old
		}
	}
	rec.CCM = conformance.Provenance{
		Commit:   *commit,
		Version:  strings.TrimSpace(string(version)),
		Recorded: time.Now().UTC().Format(time.RFC3339),
		Command:  "go run ./integration/conformance/record --ccm CCM --commit " + *commit,
	}
	base, err := os.MkdirTemp("", "ccm-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	for _, c := range cases {
		if *only != "" && c.Name != *only {
			continue
		}
		obs, err := conformance.Run(context.Background(), *bin, base, c, false)
		if err != nil {
			return err
		}
		rec.Cases[c.Name] = obs
		fmt.Printf("%-60s %d runs, exits %v\n", c.Name, len(obs), exits(obs))
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}

func exits(obs []conformance.Observation) []int {
	var e []int
	for _, o := range obs {
		e = append(e, o.Exit)
	}
	return e
}
