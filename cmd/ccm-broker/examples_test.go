package main

import (
	"io"
	"testing"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/cmd/internal/program/programtest"
)

// Every command has examples, and every example runs as written.
func TestEveryCommandHasWorkingExamples(t *testing.T) {
	programtest.CheckExamples(t, func() (*fisk.Application, error) {
		a := &app{Globals: program.Globals{Stdout: io.Discard, Stderr: io.Discard}}
		return a.newCLI()
	}, examples)
}
